#include "interposer/memory_account.h"

#include <algorithm>
#include <string>

namespace carve::interposer {

Status MemoryAccount::Admit(uint64_t bytes) { return ledger_.Reserve(bytes); }

void MemoryAccount::Abort(uint64_t bytes) { ledger_.Release(bytes); }

void MemoryAccount::Record(AllocationKind kind, uint64_t handle, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  allocations_[Key{kind, handle}] += bytes;
}

Status MemoryAccount::Resize(AllocationKind kind, uint64_t handle, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = allocations_.find(Key{kind, handle});
  if (it == allocations_.end()) {
    return NotFound("allocation " + std::to_string(handle) + " is not recorded");
  }
  if (bytes > it->second) {
    CARVE_RETURN_IF_ERROR(ledger_.Reserve(bytes - it->second));
  } else {
    ledger_.Release(it->second - bytes);
  }
  it->second = bytes;
  return OkStatus();
}

uint64_t MemoryAccount::Forget(AllocationKind kind, uint64_t handle) {
  uint64_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocations_.find(Key{kind, handle});
    if (it == allocations_.end()) return 0;
    bytes = it->second;
    allocations_.erase(it);
  }
  ledger_.Release(bytes);
  return bytes;
}

Status MemoryAccount::AdmitFromPool(uint64_t pool, uint64_t bytes) {
  uint64_t reuse = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    PoolBytes& p = pools_[pool];
    reuse = std::min(p.cached, bytes);
    p.cached -= reuse;
    p.in_use += reuse;
  }
  if (reuse == bytes) return OkStatus();
  Status s = ledger_.Reserve(bytes - reuse);
  std::lock_guard<std::mutex> lock(mu_);
  PoolBytes& p = pools_[pool];
  if (!s.ok()) {  // nothing changes after a refusal: the reused bytes go back to the cache
    p.in_use -= reuse;
    p.cached += reuse;
    return s;
  }
  p.in_use += bytes - reuse;
  return OkStatus();
}

void MemoryAccount::AbortFromPool(uint64_t pool, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  PoolBytes& p = pools_[pool];
  uint64_t n = std::min(p.in_use, bytes);
  p.in_use -= n;
  p.cached += n;  // stays charged until a SyncPool proves the pool does not hold it
}

void MemoryAccount::RecordFromPool(uint64_t pool, uint64_t ptr, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  pool_allocations_[ptr] = PoolAllocation{pool, bytes};
}

bool MemoryAccount::ForgetToPool(uint64_t ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pool_allocations_.find(ptr);
  if (it == pool_allocations_.end()) return false;
  PoolBytes& p = pools_[it->second.pool];
  uint64_t n = std::min(p.in_use, it->second.bytes);
  p.in_use -= n;
  p.cached += n;
  pool_allocations_.erase(it);
  return true;
}

void MemoryAccount::SyncPool(uint64_t pool, uint64_t reserved_bytes) {
  uint64_t release = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pools_.find(pool);
    if (it == pools_.end()) return;
    PoolBytes& p = it->second;
    uint64_t may_cache = reserved_bytes > p.in_use ? reserved_bytes - p.in_use : 0;
    if (p.cached > may_cache) {
      release = p.cached - may_cache;
      p.cached = may_cache;
    }
  }
  if (release > 0) ledger_.Release(release);
}

std::vector<uint64_t> MemoryAccount::PoolsWithCache() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> out;
  for (const auto& [pool, bytes] : pools_) {
    if (bytes.cached > 0) out.push_back(pool);
  }
  return out;
}

}  // namespace carve::interposer
