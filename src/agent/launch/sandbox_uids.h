// SandboxUids: the unprivileged uid each account's sandboxed processes run as on one node.
//
// uid = base + index, where index is the account's place in the order in which accounts first
// launched something on this node, persisted one "<account> <index>" line each in a file of the
// agent's data dir. Deterministic (an account keeps its uid across agent restarts), collision-free
// (indexes are handed out once), hash-free, and needs no coordination between nodes: the same
// account may hold different uids on different nodes, which only the node's own files see.
//
// The same index also names the account's block of host ids for containers: a container's ids
// 0..65535 (its root included) map onto container_base + index * 65536 onward (podman's
// --uidmap), so a container's root is an unprivileged host uid that no other account's container
// and no process sandbox shares. Not thread-safe; the agent's loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/result.h"

namespace carve::launch {

inline constexpr uint32_t kDefaultSandboxUidBase = 200000;
inline constexpr uint32_t kDefaultSandboxUidCount = 65536;
// 2^30: above the process range and the ranges useradd gives /etc/subuid (100000 onward, 65536
// each), with room for 49,151 accounts' blocks below 2^32-1.
inline constexpr uint32_t kDefaultContainerUidBase = 0x40000000;
inline constexpr uint32_t kContainerIdsPerAccount = 65536;

// Host ids [first, first + count): what one account's containers' ids 0..count-1 map onto.
struct IdRange {
  uint32_t first = 0;
  uint32_t count = 0;
};

class SandboxUids {
 public:
  // Reads `path` if it exists. InvalidArgument when base is 0 (root), count is 0, base + count
  // overflows, container_base is not above the process range, or a line of the file is not
  // "<account> <index>" with an index in range and unique.
  static Result<SandboxUids> Open(std::string path, uint32_t base, uint32_t count,
                                  uint32_t container_base = kDefaultContainerUidBase);

  // The account's uid (also its gid), allocating and persisting the next index for an account
  // seen for the first time. InvalidArgument for an account that is not [0-9A-Za-z_-]{1,64};
  // ResourceExhausted when every index of the range is taken; Internal when the file cannot be
  // written (nothing is allocated then).
  Result<uint32_t> UidFor(const std::string& account);

  // The account's block of host ids for its containers (allocating its index as UidFor does).
  // UidFor's errors, and ResourceExhausted when the block would pass 2^32-1.
  Result<IdRange> ContainerIdsFor(const std::string& account);

 private:
  SandboxUids(std::string path, uint32_t base, uint32_t count, uint32_t container_base)
      : path_(std::move(path)), base_(base), count_(count), container_base_(container_base) {}
  // The account's index, allocated and persisted on first sight.
  Result<uint32_t> IndexFor(const std::string& account);

  std::string path_;
  uint32_t base_;
  uint32_t count_;
  uint32_t container_base_;
  std::map<std::string, uint32_t> index_;  // account -> index
};

}  // namespace carve::launch
