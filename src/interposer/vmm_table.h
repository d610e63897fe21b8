// Bookkeeping of virtual-memory-management allocations (cuMemCreate) for the memory quota: when
// the driver really frees their physical memory. cuda.h (CUDA 13), cuMemRelease: "The memory
// allocation will be freed when all outstanding mappings to the memory are unmapped and when all
// outstanding references to the handle (including it's shareable counterparts) are also
// released"; cuMemRetainAllocationHandle: "The returned handle must be released with
// corresponding number of calls to cuMemRelease"; cuMemUnmap: "Any backing memory allocations
// will be freed if there are no existing mappings and there are no unreleased memory handles."
//
// Two patterns this covers, both common:
//   create, map, release  -> still charged (the CUDA samples release right after mapping);
//   unmap                 -> freed.
//   NCCL's ncclCuMemFree: retain(addr), release, unmap, release -> freed at the last step only.
//
// Not thread-safe: MemoryAccount guards it with its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>

namespace carve::interposer {

class VmmTable {
 public:
  // A new allocation of `bytes`, holding one reference (the handle cuMemCreate returned).
  void Create(uint64_t handle, uint64_t bytes);
  // One more reference (cuMemRetainAllocationHandle). False for a handle not created here (made
  // before the interposer loaded, imported from another process, or host memory): ignored.
  bool Retain(uint64_t handle);
  // Each returns the bytes the driver frees with this call: the allocation's size when its last
  // reference or mapping went, else 0. Unknown handles and addresses return 0.
  uint64_t Release(uint64_t handle);
  void Map(uint64_t va, uint64_t size, uint64_t handle);
  // Drops every mapping that starts inside [va, va + size) (cuMemUnmap unmaps whole mappings).
  uint64_t Unmap(uint64_t va, uint64_t size);

  // Allocations whose memory is still live (referenced or mapped).
  size_t live_count() const { return handles_.size(); }

 private:
  struct Allocation {
    uint64_t bytes = 0;
    int64_t references = 0;
    int64_t mappings = 0;
  };
  struct Mapping {
    uint64_t size = 0;
    uint64_t handle = 0;
  };
  uint64_t FreeIfUnused(std::unordered_map<uint64_t, Allocation>::iterator it);

  std::unordered_map<uint64_t, Allocation> handles_;
  std::map<uint64_t, Mapping> mappings_;  // by start address
};

}  // namespace carve::interposer
