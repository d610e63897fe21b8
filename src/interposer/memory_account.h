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
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "interposer/ledger.h"

namespace carve::interposer {

enum class AllocationKind { kDevicePointer, kArray, kMipmappedArray, kVmmHandle };

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
  std::unordered_map<Key, uint64_t, KeyHash> allocations_;           // guarded by mu_
  std::unordered_map<uint64_t, PoolBytes> pools_;                    // guarded by mu_
  std::unordered_map<uint64_t, PoolAllocation> pool_allocations_;    // guarded by mu_
};

}  // namespace carve::interposer
