// The fake libcuda.so.1's memory: plain, pitched, managed and array allocations, stream-ordered
// pools, VMM and graph memory (the model is described in fake_cuda_state.h).
#include <algorithm>

#include "interposer/testing/fake_cuda_state.h"

namespace carve::fake_cuda {

uint64_t DeviceBytesLocked(int device) {
  const Device& d = S().devices[device];
  uint64_t pools = d.default_pool.in_use + d.default_pool.cached;
  for (const auto& p : S().user_pools) {
    if (p->device == device) pools += p->in_use + p->cached;
  }
  return d.plain_bytes + d.vmm_bytes + pools + d.graph_reserved;
}

uint64_t CardFreeLocked(int device) {
  const uint64_t held = DeviceBytesLocked(device) + S().others_bytes;
  return S().total_bytes - std::min(S().total_bytes, held);
}

}  // namespace carve::fake_cuda

using namespace carve::fake_cuda;  // NOLINT: a C ABI shim

namespace {

constexpr uint64_t kVmmGranularity = 2ULL << 20;

bool Fits(int device, uint64_t bytes) { return bytes <= CardFreeLocked(device); }

CuResult Allocate(CuDevicePtr* ptr, size_t bytes) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (CuResult r = CheckUnsafeLocked(); r != kCudaSuccess) return r;
  if (bytes == 0) return kCudaErrorInvalidValue;
  const int device = CurrentDevice();
  if (!Fits(device, bytes)) return kCudaErrorOutOfMemory;
  s.devices[device].plain_bytes += bytes;
  *ptr = NewAddressLocked(bytes);
  s.plain[*ptr] = {device, bytes};
  return kCudaSuccess;
}

// Frees any stream-ordered, graph or plain allocation. Requires mu.
CuResult FreeLocked(CuDevicePtr ptr) {
  State& s = S();
  if (auto it = s.pool_ptrs.find(ptr); it != s.pool_ptrs.end()) {
    it->second.first->in_use -= it->second.second;
    it->second.first->cached += it->second.second;  // a pool keeps freed memory until trimmed
    s.pool_ptrs.erase(it);
    return kCudaSuccess;
  }
  if (auto it = s.graph_ptrs.find(ptr); it != s.graph_ptrs.end()) {
    if (!it->second.live) return kCudaErrorInvalidValue;
    it->second.live = false;
    s.devices[it->second.device].graph_live -= it->second.bytes;
    return kCudaSuccess;
  }
  auto it = s.plain.find(ptr);
  if (it == s.plain.end()) return kCudaErrorInvalidValue;
  s.devices[it->second.first].plain_bytes -= it->second.second;
  s.plain.erase(it);
  return kCudaSuccess;
}

template <typename Handle>
CuResult AllocateHandle(Handle* handle, size_t bytes) {
  CuDevicePtr p = 0;
  CuResult r = Allocate(&p, bytes);
  if (r == kCudaSuccess) *handle = reinterpret_cast<Handle>(p);
  return r;
}

CuResult FreeHandle(uint64_t handle) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (!S().plain.contains(handle)) return kCudaErrorInvalidHandle;
  return FreeLocked(handle);
}

// An allocation node in the graph being captured on `capture`'s stream. Requires mu.
CuResult CaptureAllocLocked(Capture& capture, CuDevicePtr* ptr, size_t bytes, int device) {
  *ptr = NewAddressLocked(bytes);
  S().graph_ptrs[*ptr] = {device, bytes, false};
  capture.graph->nodes.push_back({GraphNode::Kind::kAlloc, 0, *ptr});
  return kCudaSuccess;
}

CuResult PoolAlloc(CuDevicePtr* ptr, size_t bytes, Pool* pool, CuStream stream, bool per_thread) {
  if (bytes == 0) return kCudaErrorInvalidValue;
  return WithStream(stream, per_thread, [&](Capture* capture) {
    State& s = S();
    const int device = StreamDeviceLocked(stream);
    if (capture != nullptr) return CaptureAllocLocked(*capture, ptr, bytes, device);
    if (pool == nullptr) pool = s.devices[device].current_pool;
    const uint64_t reuse = std::min<uint64_t>(pool->cached, bytes);
    if (pool->device >= 0 && !Fits(pool->device, bytes - reuse)) return kCudaErrorOutOfMemory;
    pool->cached -= reuse;
    pool->in_use += bytes;
    if (pool->device < 0) s.host_bytes += bytes - reuse;
    *ptr = NewAddressLocked(bytes);
    s.pool_ptrs[*ptr] = {pool, bytes};
    return kCudaSuccess;
  });
}

CuResult FreeAsync(CuDevicePtr ptr, CuStream stream, bool per_thread) {
  return WithStream(stream, per_thread, [&](Capture* capture) {
    if (capture == nullptr) return FreeLocked(ptr);
    // cuda.h: during capture a free node, which "must therefore be passed the address of a
    // graph allocation".
    if (!S().graph_ptrs.contains(ptr)) return kCudaErrorInvalidValue;
    capture->graph->nodes.push_back({GraphNode::Kind::kFree, 0, ptr});
    return kCudaSuccess;
  });
}

Pool* PoolOf(CuMemoryPool handle) { return reinterpret_cast<Pool*>(handle); }

// Drops every mapping that starts in [va, va + size); frees allocations left unused. Requires mu.
CuResult UnmapLocked(CuDevicePtr va, size_t size) {
  State& s = S();
  bool any = false;
  for (auto m = s.mappings.lower_bound(va); m != s.mappings.end() && m->first - va < size;) {
    auto h = s.vmm.find(m->second.second);
    m = s.mappings.erase(m);
    any = true;
    if (h == s.vmm.end()) continue;
    if (--h->second.mappings == 0 && h->second.references == 0) {
      if (h->second.device >= 0) {
        s.devices[h->second.device].vmm_bytes -= h->second.bytes;
      } else {
        s.host_bytes -= h->second.bytes;
      }
      s.vmm.erase(h);
    }
  }
  return any ? kCudaSuccess : kCudaErrorInvalidValue;
}

}  // namespace

FAKE_API uint64_t carveFakeDeviceBytes(int device) {
  std::lock_guard<std::mutex> lock(S().mu);
  return DeviceBytesLocked(device);
}
FAKE_API uint64_t carveFakeAllocatedBytes() {
  std::lock_guard<std::mutex> lock(S().mu);
  uint64_t total = 0;
  for (int d = 0; d < static_cast<int>(S().devices.size()); ++d) total += DeviceBytesLocked(d);
  return total;
}
FAKE_API uint64_t carveFakeHostBytes() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().host_bytes;
}
FAKE_API uint64_t carveFakeGraphReservedBytes(int device) {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().devices[device].graph_reserved;
}

FAKE_API CuResult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  std::lock_guard<std::mutex> lock(S().mu);
  *total = S().total_bytes;
  *free_bytes = CardFreeLocked(CurrentDevice());
  return kCudaSuccess;
}
FAKE_API CuResult cuMemGetInfo(unsigned int* free_bytes, unsigned int* total) {
  size_t f = 0, t = 0;
  cuMemGetInfo_v2(&f, &t);
  *free_bytes = static_cast<unsigned int>(std::min<size_t>(f, 0xFFFFFFFFu));
  *total = static_cast<unsigned int>(std::min<size_t>(t, 0xFFFFFFFFu));
  return kCudaSuccess;
}
FAKE_API CuResult cuDeviceTotalMem_v2(size_t* bytes, CuDevice) {
  *bytes = S().total_bytes;
  return kCudaSuccess;
}
FAKE_API CuResult cuDeviceTotalMem(unsigned int* bytes, CuDevice) {
  *bytes = static_cast<unsigned int>(std::min<uint64_t>(S().total_bytes, 0xFFFFFFFFu));
  return kCudaSuccess;
}

FAKE_API CuResult cuMemAlloc_v2(CuDevicePtr* p, size_t n) { return Allocate(p, n); }
FAKE_API CuResult cuMemAlloc(unsigned int* p, unsigned int n) {
  CuDevicePtr h = 0;
  CuResult r = Allocate(&h, n);
  *p = static_cast<unsigned int>(h);
  return r;
}
FAKE_API CuResult cuMemAllocPitch_v2(CuDevicePtr* p, size_t* pitch, size_t w, size_t h,
                                     unsigned int) {
  const uint64_t align = S().pitch_align;
  *pitch = (w + align - 1) / align * align;
  return Allocate(p, *pitch * h);
}
FAKE_API CuResult cuMemAllocManaged(CuDevicePtr* p, size_t n, unsigned int) {
  return Allocate(p, n);
}
FAKE_API CuResult cuMemFree_v2(CuDevicePtr p) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (CuResult r = CheckUnsafeLocked(); r != kCudaSuccess) return r;
  return FreeLocked(p);
}
FAKE_API CuResult cuArrayCreate_v2(CuArray* a, const CuArrayDescriptor* d) {
  return AllocateHandle(a, d->Width * std::max<size_t>(d->Height, 1) * d->NumChannels * 4);
}
FAKE_API CuResult cuArray3DCreate_v2(CuArray* a, const CuArray3DDescriptor* d) {
  return AllocateHandle(a, d->Width * std::max<size_t>(d->Height, 1) *
                               std::max<size_t>(d->Depth, 1) * d->NumChannels * 4);
}
FAKE_API CuResult cuArrayDestroy(CuArray a) { return FreeHandle(reinterpret_cast<uint64_t>(a)); }
FAKE_API CuResult cuMipmappedArrayCreate(CuMipmappedArray* a, const CuArray3DDescriptor* d,
                                         unsigned int levels) {
  return AllocateHandle(a, d->Width * std::max<size_t>(d->Height, 1) *
                               std::max<size_t>(d->Depth, 1) * d->NumChannels * 4 * levels);
}
FAKE_API CuResult cuMipmappedArrayDestroy(CuMipmappedArray a) {
  return FreeHandle(reinterpret_cast<uint64_t>(a));
}

FAKE_API CuResult cuDeviceGetMemPool(CuMemoryPool* pool, CuDevice dev) {
  *pool = reinterpret_cast<CuMemoryPool>(S().devices.at(dev).current_pool);
  return kCudaSuccess;
}
FAKE_API CuResult cuDeviceGetDefaultMemPool(CuMemoryPool* pool, CuDevice dev) {
  *pool = reinterpret_cast<CuMemoryPool>(&S().devices.at(dev).default_pool);
  return kCudaSuccess;
}
FAKE_API CuResult cuDeviceSetMemPool(CuDevice dev, CuMemoryPool pool) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (PoolOf(pool)->device != dev) return kCudaErrorInvalidValue;
  S().devices.at(dev).current_pool = PoolOf(pool);
  return kCudaSuccess;
}
FAKE_API CuResult cuMemPoolCreate(CuMemoryPool* pool, const CuMemPoolProps* props) {
  if (props == nullptr) return kCudaErrorInvalidValue;
  std::lock_guard<std::mutex> lock(S().mu);
  auto p = std::make_unique<Pool>();
  p->device = props->location.type == kCuMemLocationTypeDevice ? props->location.id : -1;
  *pool = reinterpret_cast<CuMemoryPool>(p.get());
  S().user_pools.push_back(std::move(p));
  return kCudaSuccess;
}
FAKE_API CuResult cuMemAllocFromPoolAsync(CuDevicePtr* p, size_t n, CuMemoryPool pool,
                                          CuStream st) {
  return PoolAlloc(p, n, PoolOf(pool), st, false);
}
FAKE_API CuResult cuMemAllocFromPoolAsync_ptsz(CuDevicePtr* p, size_t n, CuMemoryPool pool,
                                               CuStream st) {
  return PoolAlloc(p, n, PoolOf(pool), st, true);
}
FAKE_API CuResult cuMemAllocAsync(CuDevicePtr* p, size_t n, CuStream st) {
  return PoolAlloc(p, n, nullptr, st, false);
}
FAKE_API CuResult cuMemAllocAsync_ptsz(CuDevicePtr* p, size_t n, CuStream st) {
  return PoolAlloc(p, n, nullptr, st, true);
}
FAKE_API CuResult cuMemFreeAsync(CuDevicePtr p, CuStream st) { return FreeAsync(p, st, false); }
FAKE_API CuResult cuMemFreeAsync_ptsz(CuDevicePtr p, CuStream st) { return FreeAsync(p, st, true); }
FAKE_API CuResult cuMemPoolTrimTo(CuMemoryPool pool, size_t keep) {
  std::lock_guard<std::mutex> lock(S().mu);
  Pool* p = PoolOf(pool);
  const uint64_t may_cache = keep > p->in_use ? keep - p->in_use : 0;
  const uint64_t trimmed = p->cached - std::min(p->cached, may_cache);
  p->cached -= trimmed;
  if (p->device < 0) S().host_bytes -= trimmed;
  return kCudaSuccess;
}
FAKE_API CuResult cuMemPoolGetAttribute(CuMemoryPool pool, int attr, void* value) {
  if (attr != kCuMempoolAttrReservedMemCurrent) return kCudaErrorInvalidValue;
  std::lock_guard<std::mutex> lock(S().mu);
  *static_cast<CuUint64*>(value) = PoolOf(pool)->in_use + PoolOf(pool)->cached;
  return kCudaSuccess;
}

FAKE_API CuResult cuMemGetAllocationGranularity(size_t* granularity, const CuMemAllocationProp*,
                                                int) {
  *granularity = kVmmGranularity;
  return kCudaSuccess;
}
FAKE_API CuResult cuMemCreate(CuMemGenericAllocationHandle* h, size_t n,
                              const CuMemAllocationProp* prop, unsigned long long) {
  if (prop == nullptr || n == 0 || n % kVmmGranularity != 0) return kCudaErrorInvalidValue;
  std::lock_guard<std::mutex> lock(S().mu);
  const bool device = prop->location.type == kCuMemLocationTypeDevice;
  const int dev = device ? prop->location.id : -1;
  if (device && !Fits(dev, n)) return kCudaErrorOutOfMemory;
  if (device) {
    S().devices.at(dev).vmm_bytes += n;
  } else {
    S().host_bytes += n;
  }
  *h = NewAddressLocked(n);
  S().vmm[*h] = {dev, n, 1, 0};
  return kCudaSuccess;
}
FAKE_API CuResult cuMemRelease(CuMemGenericAllocationHandle h) {
  std::lock_guard<std::mutex> lock(S().mu);
  auto it = S().vmm.find(h);
  if (it == S().vmm.end() || it->second.references == 0) return kCudaErrorInvalidValue;
  if (--it->second.references == 0 && it->second.mappings == 0) {
    if (it->second.device >= 0) {
      S().devices[it->second.device].vmm_bytes -= it->second.bytes;
    } else {
      S().host_bytes -= it->second.bytes;
    }
    S().vmm.erase(it);
  }
  return kCudaSuccess;
}
FAKE_API CuResult cuMemAddressReserve(CuDevicePtr* ptr, size_t size, size_t, CuDevicePtr,
                                      unsigned long long) {
  std::lock_guard<std::mutex> lock(S().mu);
  *ptr = NewAddressLocked(size);
  return kCudaSuccess;
}
FAKE_API CuResult cuMemAddressFree(CuDevicePtr, size_t) { return kCudaSuccess; }
FAKE_API CuResult cuMemMap(CuDevicePtr ptr, size_t size, size_t, CuMemGenericAllocationHandle h,
                           unsigned long long) {
  std::lock_guard<std::mutex> lock(S().mu);
  auto it = S().vmm.find(h);
  if (it == S().vmm.end() || S().mappings.contains(ptr)) return kCudaErrorInvalidValue;
  ++it->second.mappings;
  S().mappings[ptr] = {size, h};
  return kCudaSuccess;
}
FAKE_API CuResult cuMemUnmap(CuDevicePtr ptr, size_t size) {
  std::lock_guard<std::mutex> lock(S().mu);
  return UnmapLocked(ptr, size);
}
FAKE_API CuResult cuMemSetAccess(CuDevicePtr, size_t, const void*, size_t) { return kCudaSuccess; }
FAKE_API CuResult cuMemRetainAllocationHandle(CuMemGenericAllocationHandle* h, void* addr) {
  std::lock_guard<std::mutex> lock(S().mu);
  const auto a = reinterpret_cast<uint64_t>(addr);
  auto m = S().mappings.upper_bound(a);
  if (m == S().mappings.begin()) return kCudaErrorInvalidValue;
  --m;
  if (a - m->first >= m->second.first) return kCudaErrorInvalidValue;
  *h = m->second.second;
  ++S().vmm.at(*h).references;
  return kCudaSuccess;
}

// Graph memory: nodes added to a graph explicitly.
FAKE_API CuResult cuGraphAddMemAllocNode(CuGraphNode* node, CuGraph graph, const CuGraphNode*,
                                         size_t, CuMemAllocNodeParams* params) {
  if (graph == nullptr || params == nullptr || params->bytesize == 0 ||
      params->poolProps.location.type != kCuMemLocationTypeDevice) {
    return kCudaErrorInvalidValue;
  }
  std::lock_guard<std::mutex> lock(S().mu);
  params->dptr = NewAddressLocked(params->bytesize);
  S().graph_ptrs[params->dptr] = {params->poolProps.location.id, params->bytesize, false};
  auto* g = reinterpret_cast<Graph*>(graph);
  g->nodes.push_back({GraphNode::Kind::kAlloc, 0, params->dptr});
  *node = reinterpret_cast<CuGraphNode>(g->nodes.size());
  return kCudaSuccess;
}
FAKE_API CuResult cuGraphAddMemFreeNode(CuGraphNode* node, CuGraph graph, const CuGraphNode*,
                                        size_t, CuDevicePtr dptr) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (graph == nullptr || !S().graph_ptrs.contains(dptr)) return kCudaErrorInvalidValue;
  auto* g = reinterpret_cast<Graph*>(graph);
  g->nodes.push_back({GraphNode::Kind::kFree, 0, dptr});
  *node = reinterpret_cast<CuGraphNode>(g->nodes.size());
  return kCudaSuccess;
}
FAKE_API CuResult cuGraphAddNode(CuGraphNode* node, CuGraph graph, const CuGraphNode* deps,
                                 size_t n, CuGraphNodeParams* params) {
  if (params == nullptr) return kCudaErrorInvalidValue;
  if (params->type == kCuGraphNodeTypeMemAlloc) {
    return cuGraphAddMemAllocNode(node, graph, deps, n, &params->alloc);
  }
  if (params->type == kCuGraphNodeTypeMemFree) {
    return cuGraphAddMemFreeNode(node, graph, deps, n, params->free.dptr);
  }
  return kCudaErrorNotSupported;  // the fake builds memory nodes only
}
FAKE_API CuResult cuGraphAddNode_v2(CuGraphNode* node, CuGraph graph, const CuGraphNode* deps,
                                    const CuGraphEdgeData*, size_t n, CuGraphNodeParams* params) {
  return cuGraphAddNode(node, graph, deps, n, params);
}
FAKE_API CuResult cuDeviceGraphMemTrim(CuDevice dev) {
  std::lock_guard<std::mutex> lock(S().mu);
  Device& d = S().devices.at(dev);
  d.graph_reserved = d.graph_live;
  return kCudaSuccess;
}
FAKE_API CuResult cuDeviceGetGraphMemAttribute(CuDevice dev, int attr, void* value) {
  std::lock_guard<std::mutex> lock(S().mu);
  const Device& d = S().devices.at(dev);
  if (attr == kCuGraphMemAttrUsedMemCurrent) {
    *static_cast<CuUint64*>(value) = d.graph_live;
  } else if (attr == kCuGraphMemAttrReservedMemCurrent) {
    *static_cast<CuUint64*>(value) = d.graph_reserved;
  } else {
    return kCudaErrorInvalidValue;
  }
  return kCudaSuccess;
}

namespace carve::fake_cuda {
namespace {

#define FAKE_ENTRY(n, ...) \
  Entry { #n, reinterpret_cast < void*>(&n), ##__VA_ARGS__ }
const Entry kMemoryEntries[] = {
    FAKE_ENTRY(cuMemGetInfo, 2000),
    FAKE_ENTRY(cuMemGetInfo_v2, 3020),
    FAKE_ENTRY(cuDeviceTotalMem, 2000),
    FAKE_ENTRY(cuDeviceTotalMem_v2, 3020),
    FAKE_ENTRY(cuMemAlloc, 2000),
    FAKE_ENTRY(cuMemAlloc_v2, 3020),
    FAKE_ENTRY(cuMemAllocPitch_v2, 3020),
    FAKE_ENTRY(cuMemAllocManaged),
    FAKE_ENTRY(cuMemFree_v2, 3020),
    FAKE_ENTRY(cuArrayCreate_v2, 3020),
    FAKE_ENTRY(cuArray3DCreate_v2, 3020),
    FAKE_ENTRY(cuArrayDestroy),
    FAKE_ENTRY(cuMipmappedArrayCreate),
    FAKE_ENTRY(cuMipmappedArrayDestroy),
    FAKE_ENTRY(cuDeviceGetMemPool),
    FAKE_ENTRY(cuDeviceGetDefaultMemPool),
    FAKE_ENTRY(cuDeviceSetMemPool),
    FAKE_ENTRY(cuMemPoolCreate),
    FAKE_ENTRY(cuMemAllocFromPoolAsync),
    FAKE_ENTRY(cuMemAllocFromPoolAsync_ptsz),
    FAKE_ENTRY(cuMemAllocAsync),
    FAKE_ENTRY(cuMemAllocAsync_ptsz),
    FAKE_ENTRY(cuMemFreeAsync),
    FAKE_ENTRY(cuMemFreeAsync_ptsz),
    FAKE_ENTRY(cuMemPoolTrimTo),
    FAKE_ENTRY(cuMemPoolGetAttribute),
    FAKE_ENTRY(cuMemGetAllocationGranularity),
    FAKE_ENTRY(cuMemCreate),
    FAKE_ENTRY(cuMemRelease),
    FAKE_ENTRY(cuMemAddressReserve),
    FAKE_ENTRY(cuMemAddressFree),
    FAKE_ENTRY(cuMemMap),
    FAKE_ENTRY(cuMemUnmap),
    FAKE_ENTRY(cuMemSetAccess),
    FAKE_ENTRY(cuMemRetainAllocationHandle),
    FAKE_ENTRY(cuGraphAddMemAllocNode),
    FAKE_ENTRY(cuGraphAddMemFreeNode),
    FAKE_ENTRY(cuGraphAddNode, 12020),
    FAKE_ENTRY(cuGraphAddNode_v2, 12030),
    FAKE_ENTRY(cuDeviceGraphMemTrim),
    FAKE_ENTRY(cuDeviceGetGraphMemAttribute),
};

}  // namespace

std::span<const Entry> MemoryEntries() { return kMemoryEntries; }

}  // namespace carve::fake_cuda
