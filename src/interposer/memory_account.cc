#include "interposer/memory_account.h"

#include <algorithm>
#include <string>

namespace carve::interposer {
namespace {

constexpr uint64_t kGraphPoolTag = uint64_t{1} << 63;

}  // namespace

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

uint64_t MemoryAccount::GraphPoolKey(int device) {
  return kGraphPoolTag | static_cast<uint32_t>(device);
}
bool MemoryAccount::IsGraphPoolKey(uint64_t pool) { return (pool & kGraphPoolTag) != 0; }
int MemoryAccount::GraphPoolDevice(uint64_t pool) {
  return static_cast<int>(static_cast<uint32_t>(pool & ~kGraphPoolTag));
}

void MemoryAccount::NoteGraphOwner(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  graph_owners_.insert(handle);
}
void MemoryAccount::ForgetGraphOwner(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  graph_owners_.erase(handle);
}
bool MemoryAccount::IsGraphOwner(uint64_t handle) const {
  std::lock_guard<std::mutex> lock(mu_);
  return graph_owners_.contains(handle);
}
bool MemoryAccount::HasGraphOwners() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !graph_owners_.empty();
}

void MemoryAccount::NoteHostPool(uint64_t pool) {
  std::lock_guard<std::mutex> lock(mu_);
  host_pools_.insert(pool);
}
bool MemoryAccount::IsHostPool(uint64_t pool) const {
  std::lock_guard<std::mutex> lock(mu_);
  return host_pools_.contains(pool);
}

void MemoryAccount::RecordVmm(uint64_t handle, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  vmm_.Create(handle, bytes);
}
void MemoryAccount::RetainVmm(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  vmm_.Retain(handle);
}
void MemoryAccount::ReleaseVmm(uint64_t handle) {
  uint64_t freed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    freed = vmm_.Release(handle);
  }
  if (freed > 0) ledger_.Release(freed);
}
void MemoryAccount::MapVmm(uint64_t va, uint64_t size, uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  vmm_.Map(va, size, handle);
}
void MemoryAccount::UnmapVmm(uint64_t va, uint64_t size) {
  uint64_t freed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    freed = vmm_.Unmap(va, size);
  }
  if (freed > 0) ledger_.Release(freed);
}

}  // namespace carve::interposer
