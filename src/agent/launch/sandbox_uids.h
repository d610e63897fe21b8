// SandboxUids: the unprivileged uid each account's sandboxed processes run as on one node.
//
// uid = base + index, where index is the account's place in the order in which accounts first
// launched something on this node, persisted one "<account> <index>" line each in a file of the
// agent's data dir. Deterministic (an account keeps its uid across agent restarts), collision-free
// (indexes are handed out once), hash-free, and needs no coordination between nodes: the same
// account may hold different uids on different nodes, which only the node's own files see.
// Not thread-safe; the agent's loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/result.h"

namespace carve::launch {

inline constexpr uint32_t kDefaultSandboxUidBase = 200000;
inline constexpr uint32_t kDefaultSandboxUidCount = 65536;

class SandboxUids {
 public:
  // Reads `path` if it exists. InvalidArgument when base is 0 (root), count is 0, base + count
  // overflows, or a line of the file is not "<account> <index>" with an index in range and unique.
  static Result<SandboxUids> Open(std::string path, uint32_t base, uint32_t count);

  // The account's uid (also its gid), allocating and persisting the next index for an account
  // seen for the first time. InvalidArgument for an account that is not [0-9A-Za-z_-]{1,64};
  // ResourceExhausted when every index of the range is taken; Internal when the file cannot be
  // written (nothing is allocated then).
  Result<uint32_t> UidFor(const std::string& account);

 private:
  SandboxUids(std::string path, uint32_t base, uint32_t count)
      : path_(std::move(path)), base_(base), count_(count) {}
  std::string path_;
  uint32_t base_;
  uint32_t count_;
  std::map<std::string, uint32_t> index_;  // account -> index
};

}  // namespace carve::launch
