// What one process has allocated, charged against its worker's ledger. The interposer's memory
// hooks follow one pattern (see hooks_memory.cc):
//
//   CARVE_RETURN_IF_ERROR(account.Admit(bytes));        // quota check; nothing allocated yet
//   r = real_alloc(...);
//   r ok ? account.Record(kind, handle, bytes) : account.Abort(bytes);
//   ...
//   account.Forget(kind, handle);                      // after a successful real free
//
// Stream-ordered pools: a cuMemFreeAsync returns bytes to the pool, which may keep them reserved
// on the device, so they stay charged as the pool's "cached" bytes and later allocations from the
// same pool reuse them before charging the ledger. When the quota says no, the hook trims the
// pools (cuMemPoolTrimTo) and calls SyncPool with what the driver says each pool still reserves;
// the difference is released and the allocation retried once. The ledger is thus an upper bound
// on device memory, never an under-count (HAMi-core#96 was an under-count).
//
// Graph memory (cuda.h "Graph memory nodes"): allocations made on a capturing stream or by
// cuGraphAddMemAllocNode come from the device's graph pool, not from a stream-ordered pool. They
// are charged when the node is created, under the pool key GraphPoolKey(device), and their frees
// (free nodes, or cuMemFree/cuMemFreeAsync of an allocation left unfreed) move them to that
// key's cache like any pool. The graph pool's cache is released only by a sync when no graph or
// executable graph that may hold graph allocations is alive (NoteGraphOwner): until then a
// launch could map physical memory for them again, whatever the driver reserves right now.
//
// VMM (cuMemCreate): charged until the driver frees the physical memory, i.e. after the last
// reference and the last mapping (vmm_table.h).
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/result.h"
#include "interposer/ledger.h"
#include "interposer/vmm_table.h"

namespace carve::interposer {

enum class AllocationKind { kDevicePointer, kArray, kMipmappedArray };

class MemoryAccount {
 public:
  explicit MemoryAccount(Ledger& ledger) : ledger_(ledger) {}

  // Charges `bytes` before the real allocation. ResourceExhausted when over the quota.
  Status Admit(uint64_t bytes);
  // Undoes an Admit whose real allocation failed.
  void Abort(uint64_t bytes);
  // Remembers a successful allocation admitted for `bytes`.
  void Record(AllocationKind kind, uint64_t handle, uint64_t bytes);
  // Changes what a recorded `handle` is charged (the driver chose a pitch). ResourceExhausted,
  // with nothing changed, when growing it would exceed the quota; NotFound for unknown handles.
  Status Resize(AllocationKind kind, uint64_t handle, uint64_t bytes);
  // Releases what `handle` was charged; 0 for a handle this process did not record (allocated
  // before the interposer was loaded, or not a device allocation).
  uint64_t Forget(AllocationKind kind, uint64_t handle);

  // Stream-ordered allocations: `pool` identifies the pool (its handle value).
  Status AdmitFromPool(uint64_t pool, uint64_t bytes);
  void AbortFromPool(uint64_t pool, uint64_t bytes);
  void RecordFromPool(uint64_t pool, uint64_t ptr, uint64_t bytes);
  // After cuMemFreeAsync: the bytes move to the pool's cache and stay charged. False when `ptr`
  // was not allocated from a pool by this process (cuMemFreeAsync also frees cuMemAlloc memory).
  bool ForgetToPool(uint64_t ptr);
  // The driver reports `reserved_bytes` for `pool` (e.g. after a trim): cached bytes above
  // reserved - in use are released from the ledger.
  void SyncPool(uint64_t pool, uint64_t reserved_bytes);
  // Pools that hold cached bytes, for the hook to trim under pressure.
  std::vector<uint64_t> PoolsWithCache() const;

  // The pool key of `device`'s graph memory; never equal to a pool handle (user-space pointers
  // stay below bit 63).
  static uint64_t GraphPoolKey(int device);
  static bool IsGraphPoolKey(uint64_t pool);
  static int GraphPoolDevice(uint64_t pool);
  // Graphs and executable graphs that may own graph allocations, by handle value.
  void NoteGraphOwner(uint64_t handle);
  void ForgetGraphOwner(uint64_t handle);
  bool IsGraphOwner(uint64_t handle) const;
  bool HasGraphOwners() const;

  // Pools created with a host location (cuMemPoolCreate): their allocations are not charged.
  void NoteHostPool(uint64_t pool);
  bool IsHostPool(uint64_t pool) const;

  // VMM: after a successful cuMemCreate admitted for `bytes`; retains, releases, maps and unmaps
  // after the driver accepted them. The ledger is released when the driver frees the memory.
  void RecordVmm(uint64_t handle, uint64_t bytes);
  void RetainVmm(uint64_t handle);
  void ReleaseVmm(uint64_t handle);
  void MapVmm(uint64_t va, uint64_t size, uint64_t handle);
  void UnmapVmm(uint64_t va, uint64_t size);

  uint64_t LedgerUsedBytes() { return ledger_.UsedBytes(); }
  uint64_t LimitBytes() const { return ledger_.settings().memory_limit_bytes; }

 private:
  struct Key {
    AllocationKind kind;
    uint64_t handle;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>{}(k.handle) ^ (static_cast<size_t>(k.kind) << 1);
    }
  };
  struct PoolBytes {
    uint64_t in_use = 0;
    uint64_t cached = 0;
  };
  struct PoolAllocation {
    uint64_t pool;
    uint64_t bytes;
  };

  Ledger& ledger_;
  mutable std::mutex mu_;
  std::unordered_map<Key, uint64_t, KeyHash> allocations_;         // guarded by mu_
  std::unordered_map<uint64_t, PoolBytes> pools_;                  // guarded by mu_
  std::unordered_map<uint64_t, PoolAllocation> pool_allocations_;  // guarded by mu_
  std::unordered_set<uint64_t> graph_owners_;                      // guarded by mu_
  std::unordered_set<uint64_t> host_pools_;                        // guarded by mu_
  VmmTable vmm_;                                                   // guarded by mu_
};

}  // namespace carve::interposer
