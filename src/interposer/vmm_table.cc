#include "interposer/vmm_table.h"

namespace carve::interposer {

void VmmTable::Create(uint64_t handle, uint64_t bytes) { handles_[handle] = {bytes, 1, 0}; }

bool VmmTable::Retain(uint64_t handle) {
  auto it = handles_.find(handle);
  if (it == handles_.end()) return false;
  ++it->second.references;
  return true;
}

uint64_t VmmTable::Release(uint64_t handle) {
  auto it = handles_.find(handle);
  if (it == handles_.end() || it->second.references == 0) return 0;
  --it->second.references;
  return FreeIfUnused(it);
}

void VmmTable::Map(uint64_t va, uint64_t size, uint64_t handle) {
  auto it = handles_.find(handle);
  if (it == handles_.end()) return;
  ++it->second.mappings;
  mappings_[va] = {size, handle};
}

uint64_t VmmTable::Unmap(uint64_t va, uint64_t size) {
  uint64_t freed = 0;
  for (auto m = mappings_.lower_bound(va); m != mappings_.end() && m->first - va < size;) {
    auto it = handles_.find(m->second.handle);
    m = mappings_.erase(m);
    if (it == handles_.end()) continue;
    --it->second.mappings;
    freed += FreeIfUnused(it);
  }
  return freed;
}

uint64_t VmmTable::FreeIfUnused(std::unordered_map<uint64_t, Allocation>::iterator it) {
  if (it->second.references > 0 || it->second.mappings > 0) return 0;
  const uint64_t bytes = it->second.bytes;
  handles_.erase(it);
  return bytes;
}

}  // namespace carve::interposer
