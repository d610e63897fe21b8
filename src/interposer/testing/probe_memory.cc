// mgpu_probe's memory actions: each allocation path charges exactly what it holds on the device,
// each free path returns it, and no path lets the device hold more than the quota.
#include <cstring>

#include "interposer/testing/probe_api.h"

namespace carve::interposer::probe {
namespace {

CuMemAllocationProp PropAt(int location_type, int id = 0) {
  CuMemAllocationProp prop;
  std::memset(&prop, 0, sizeof(prop));
  prop.type = kCuMemAllocationTypePinned;
  prop.location = {location_type, id};
  return prop;
}

CuMemAllocNodeParams AllocNodeParams(size_t bytes, int device = 0) {
  CuMemAllocNodeParams params;
  std::memset(&params, 0, sizeof(params));
  params.poolProps.allocType = kCuMemAllocationTypePinned;
  params.poolProps.location = {kCuMemLocationTypeDevice, device};
  params.bytesize = bytes;
  return params;
}

constexpr size_t kGranule = 2 << 20;  // the fake's VMM granularity

}  // namespace

int Exact(const Api& api, uint64_t limit) {
  CuDevicePtr a = 0, b = 0, c = 0;
  CHECK_EQ(api.mem_alloc(&a, limit - 1), kCudaSuccess);
  CHECK_EQ(api.mem_alloc(&b, 1), kCudaSuccess);  // the last byte fits
  const uint64_t device_before = api.fake_allocated();
  CHECK_EQ(api.mem_alloc(&c, 1), kCudaErrorOutOfMemory);  // one more does not
  CHECK_EQ(api.fake_allocated(), device_before);          // and nothing reached the driver
  CHECK_EQ(api.mem_free(b), kCudaSuccess);
  CHECK_EQ(api.mem_alloc(&c, 1), kCudaSuccess);
  CHECK_EQ(api.mem_free(a), kCudaSuccess);
  CHECK_EQ(api.mem_free(c), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);
  std::printf("exact ok\n");
  return 0;
}

// Each allocation path charges exactly its size and each free path returns it.
int Paths(const Api& api) {
  size_t free_bytes = 0, limit = 0;
  CHECK_EQ(api.mem_get_info(&free_bytes, &limit), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);
  CuDevicePtr p = 0;
  CHECK_EQ(api.mem_alloc(&p, 1000), kCudaSuccess);
  CHECK_EQ(Used(api), 1000u);
  CHECK_EQ(api.mem_free(p), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);

  CHECK_EQ(api.mem_alloc_managed(&p, 3000, 1), kCudaSuccess);
  CHECK_EQ(Used(api), 3000u);
  CHECK_EQ(api.mem_free(p), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);

  CuMemGenericAllocationHandle h = 0;
  const CuMemAllocationProp on_device = PropAt(kCuMemLocationTypeDevice);
  CHECK_EQ(api.mem_create(&h, kGranule, &on_device, 0), kCudaSuccess);
  CHECK_EQ(Used(api), kGranule);
  CHECK_EQ(api.mem_release(h), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);

  CuArray arr = nullptr;
  CuArrayDescriptor d2{64, 32, kCuAdFormatFloat, 2};
  CHECK_EQ(api.array_create(&arr, &d2), kCudaSuccess);
  CHECK_EQ(Used(api), 64u * 32 * 2 * 4);
  CHECK_EQ(api.array_destroy(arr), kCudaSuccess);
  CuArray3DDescriptor d3{16, 16, 4, kCuAdFormatUnsignedInt8, 4, 0};
  CHECK_EQ(api.array3d_create(&arr, &d3), kCudaSuccess);
  CHECK_EQ(Used(api), 16u * 16 * 4 * 4);
  CHECK_EQ(api.array_destroy(arr), kCudaSuccess);
  CuMipmappedArray mip = nullptr;
  CuArray3DDescriptor dm{8, 8, 0, kCuAdFormatFloat, 1, 0};
  CHECK_EQ(api.mipmapped_array_create(&mip, &dm, 2), kCudaSuccess);
  CHECK_EQ(Used(api), 8u * 8 * 4 + 4u * 4 * 4);
  CHECK_EQ(api.mipmapped_array_destroy(mip), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);

  // Stream-ordered: freed bytes stay charged while the pool holds them; a trim releases them.
  CuMemoryPool pool = nullptr;
  CHECK_EQ(api.device_get_mem_pool(&pool, 0), kCudaSuccess);
  CHECK_EQ(api.mem_alloc_async(&p, 5000, nullptr), kCudaSuccess);
  CHECK_EQ(Used(api), 5000u);
  CHECK_EQ(api.mem_free_async(p, nullptr), kCudaSuccess);
  CHECK_EQ(Used(api), 5000u);
  CHECK_EQ(api.mem_alloc_from_pool_async(&p, 4000, pool, nullptr), kCudaSuccess);
  CHECK_EQ(Used(api), 5000u);  // reused from the pool's cache
  CHECK_EQ(api.mem_free_async(p, nullptr), kCudaSuccess);
  CHECK_EQ(api.mem_pool_trim_to(pool, 0), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);

  // Under quota pressure the interposer trims cached pool memory itself.
  CHECK_EQ(api.mem_alloc_async(&p, limit, nullptr), kCudaSuccess);
  CHECK_EQ(api.mem_free_async(p, nullptr), kCudaSuccess);
  CHECK_EQ(Used(api), limit);
  CHECK_EQ(api.mem_alloc(&p, limit), kCudaSuccess);
  CHECK_EQ(api.fake_allocated(), limit);  // the device holds the quota once, not twice
  CHECK_EQ(api.mem_free(p), kCudaSuccess);

  // cuMemFree of stream-ordered memory (cuda.h allows it): back to the pool, then trimmable.
  CHECK_EQ(api.mem_alloc_async(&p, limit, nullptr), kCudaSuccess);
  CHECK_EQ(api.mem_free(p), kCudaSuccess);
  CHECK_EQ(api.mem_alloc(&p, limit), kCudaSuccess);
  CHECK_EQ(api.fake_allocated(), limit);
  CHECK_EQ(api.mem_free(p), kCudaSuccess);

  // Over the quota, every path says out of memory before the driver allocates anything.
  const uint64_t device_before = api.fake_allocated();
  size_t pitch = 0;
  CHECK_EQ(api.mem_alloc(&p, limit + 1), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mem_alloc_pitch(&p, &pitch, limit, 2, 4), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mem_alloc_managed(&p, limit + 1, 1), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mem_alloc_async(&p, limit + 1, nullptr), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mem_alloc_from_pool_async(&p, limit + 1, pool, nullptr), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mem_create(&h, (limit / kGranule + 1) * kGranule, &on_device, 0),
           kCudaErrorOutOfMemory);
  CuArrayDescriptor big{limit, 1, kCuAdFormatUnsignedInt8, 2};
  CHECK_EQ(api.array_create(&arr, &big), kCudaErrorOutOfMemory);
  CuArray3DDescriptor big3{limit, 1, 1, kCuAdFormatUnsignedInt8, 2, 0};
  CHECK_EQ(api.array3d_create(&arr, &big3), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mipmapped_array_create(&mip, &big3, 1), kCudaErrorOutOfMemory);
  CHECK_EQ(api.fake_allocated(), device_before);
  CHECK_EQ(Used(api), 0u);
  std::printf("paths ok\n");
  return 0;
}

// A pitched allocation is charged what the driver's pitch makes of it, whether that is below or
// above the bound admitted first; prints "pitch=<driver's> used=<charged>".
int Pitch(const Api& api, size_t width, size_t height) {
  CuDevicePtr p = 0;
  size_t pitch = 0;
  const uint64_t device_before = api.fake_allocated();
  CuResult r = api.mem_alloc_pitch(&p, &pitch, width, height, 4);
  if (r != kCudaSuccess) {
    CHECK_EQ(api.fake_allocated(), device_before);  // undone on the device too
    CHECK_EQ(Used(api), 0u);
    std::printf("pitch=refused result=%d\n", r);
    return 3;
  }
  std::printf("pitch=%zu used=%llu\n", pitch, static_cast<unsigned long long>(Used(api)));
  CHECK_EQ(api.mem_free(p), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);
  return 0;
}

// VMM: references and mappings keep memory alive (cuda.h cuMemRelease), host memory is free.
int Vmm(const Api& api) {
  const CuMemAllocationProp on_device = PropAt(kCuMemLocationTypeDevice);
  CuMemGenericAllocationHandle h = 0, again = 0;
  CuDevicePtr va = 0;
  // The CUDA samples: create, map, release at once; the memory lives until unmapped.
  CHECK_EQ(api.mem_create(&h, kGranule, &on_device, 0), kCudaSuccess);
  CHECK_EQ(api.mem_address_reserve(&va, kGranule, 0, 0, 0), kCudaSuccess);
  CHECK_EQ(api.mem_map(va, kGranule, 0, h, 0), kCudaSuccess);
  CHECK_EQ(api.mem_release(h), kCudaSuccess);
  CHECK_EQ(api.fake_allocated(), kGranule);
  CHECK_EQ(Used(api), kGranule);
  CHECK_EQ(api.mem_unmap(va, kGranule), kCudaSuccess);
  CHECK_EQ(api.fake_allocated(), 0u);
  CHECK_EQ(Used(api), 0u);

  // NCCL's ncclCuMemFree: retain by address, release, unmap, release.
  CHECK_EQ(api.mem_create(&h, 2 * kGranule, &on_device, 0), kCudaSuccess);
  CHECK_EQ(api.mem_map(va, 2 * kGranule, 0, h, 0), kCudaSuccess);
  CHECK_EQ(api.mem_retain(&again, reinterpret_cast<void*>(va + 4096)), kCudaSuccess);
  CHECK_EQ(again, h);
  CHECK_EQ(api.mem_release(again), kCudaSuccess);
  CHECK_EQ(Used(api), 2 * kGranule);
  CHECK_EQ(api.mem_unmap(va, 2 * kGranule), kCudaSuccess);
  CHECK_EQ(Used(api), 2 * kGranule);  // one reference left
  CHECK_EQ(api.fake_allocated(), 2 * kGranule);
  CHECK_EQ(api.mem_release(h), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);
  CHECK_EQ(api.fake_allocated(), 0u);

  // Host-located VMM (NCCL's ncclCuMemHostAlloc) is host memory: never charged, even over
  // the quota.
  size_t free_bytes = 0, limit = 0;
  CHECK_EQ(api.mem_get_info(&free_bytes, &limit), kCudaSuccess);
  const size_t beyond = (limit / kGranule + 1) * kGranule;
  for (int type :
       {kCuMemLocationTypeHost, kCuMemLocationTypeHostNuma, kCuMemLocationTypeHostNumaCurrent}) {
    const CuMemAllocationProp on_host = PropAt(type);
    CHECK_EQ(api.mem_create(&h, beyond, &on_host, 0), kCudaSuccess);
    CHECK_EQ(Used(api), 0u);
    CHECK_EQ(api.fake_host_bytes(), beyond);
    CHECK_EQ(api.mem_release(h), kCudaSuccess);
  }
  // And host memory leaves the quota's room untouched for device memory.
  const CuMemAllocationProp on_host = PropAt(kCuMemLocationTypeHostNuma);
  CHECK_EQ(api.mem_create(&h, beyond, &on_host, 0), kCudaSuccess);
  CuDevicePtr p = 0;
  CHECK_EQ(api.mem_alloc(&p, limit), kCudaSuccess);
  CHECK_EQ(api.mem_free(p), kCudaSuccess);
  CHECK_EQ(api.mem_release(h), kCudaSuccess);
  std::printf("vmm ok\n");
  return 0;
}

// Graph memory: allocation nodes, captured or explicit, are charged; a trim never releases
// memory a live graph can map again.
int GraphMemory(const Api& api) {
  size_t free_bytes = 0, limit = 0;
  CHECK_EQ(api.mem_get_info(&free_bytes, &limit), kCudaSuccess);
  const size_t part = limit * 6 / 10;
  CuStream s = nullptr;
  CHECK_EQ(api.stream_create(&s, 0), kCudaSuccess);

  // A captured allocation and its free: charged at capture, mapped at launch.
  CuDevicePtr a = 0;
  CHECK_EQ(api.begin_capture(s, kCuStreamCaptureModeGlobal), kCudaSuccess);
  CHECK_EQ(api.mem_alloc_async(&a, part, s), kCudaSuccess);
  CHECK_EQ(api.launch_kernel(nullptr, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr), kCudaSuccess);
  CHECK_EQ(api.mem_free_async(a, s), kCudaSuccess);
  CuGraph g = nullptr;
  CHECK_EQ(api.end_capture(s, &g), kCudaSuccess);
  CHECK_EQ(Used(api), part);
  CHECK_EQ(api.fake_allocated(), 0u);  // nothing is mapped before a launch
  CuGraphExec exec = nullptr;
  CHECK_EQ(api.instantiate(&exec, g, 0), kCudaSuccess);
  CHECK_EQ(api.graph_launch(exec, s), kCudaSuccess);
  CHECK_EQ(api.ctx_synchronize(), kCudaSuccess);
  CHECK_EQ(api.fake_graph_reserved(0), part);
  // While the graph lives, what the rest of the quota allows is all there is.
  CuDevicePtr p = 0;
  CHECK_EQ(api.mem_alloc(&p, limit - part + 1), kCudaErrorOutOfMemory);
  CHECK_EQ(api.fake_allocated(), part);
  CHECK_EQ(api.mem_alloc(&p, limit - part), kCudaSuccess);
  CHECK_EQ(api.mem_free(p), kCudaSuccess);
  // Destroyed, its memory can be trimmed: the whole quota is free again.
  CHECK_EQ(api.graph_exec_destroy(exec), kCudaSuccess);
  CHECK_EQ(api.graph_destroy(g), kCudaSuccess);
  CHECK_EQ(api.mem_alloc(&p, limit), kCudaSuccess);
  CHECK_EQ(api.fake_allocated(), limit);
  CHECK_EQ(api.mem_free(p), kCudaSuccess);

  // Explicit nodes: cuGraphAddMemAllocNode and cuGraphAddNode; an allocation left unfreed by its
  // graph is freed later with cuMemFree.
  CHECK_EQ(api.graph_create(&g, 0), kCudaSuccess);
  CuMemAllocNodeParams alloc = AllocNodeParams(part / 2);
  CuGraphNode node = nullptr;
  CHECK_EQ(api.graph_add_mem_alloc_node(&node, g, nullptr, 0, &alloc), kCudaSuccess);
  CuGraphNodeParams generic;
  std::memset(&generic, 0, sizeof(generic));
  generic.type = kCuGraphNodeTypeMemAlloc;
  generic.alloc = AllocNodeParams(part / 2);
  CHECK_EQ(api.graph_add_node(&node, g, nullptr, nullptr, 0, &generic), kCudaSuccess);
  CHECK_EQ(Used(api), part / 2 * 2);
  CuGraphNodeParams free_node;
  std::memset(&free_node, 0, sizeof(free_node));
  free_node.type = kCuGraphNodeTypeMemFree;
  free_node.free.dptr = generic.alloc.dptr;
  CHECK_EQ(api.graph_add_node(&node, g, nullptr, nullptr, 0, &free_node), kCudaSuccess);
  CHECK_EQ(api.instantiate(&exec, g, 0), kCudaSuccess);
  CHECK_EQ(api.graph_launch(exec, s), kCudaSuccess);
  CHECK_EQ(api.mem_alloc(&p, limit - part / 2 * 2 + 1), kCudaErrorOutOfMemory);
  CHECK_EQ(api.graph_exec_destroy(exec), kCudaSuccess);
  CHECK_EQ(api.graph_destroy(g), kCudaSuccess);
  CHECK_EQ(api.mem_free(alloc.dptr), kCudaSuccess);  // left unfreed by its graph
  CHECK_EQ(api.device_graph_mem_trim(0), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);
  CHECK_EQ(api.fake_allocated(), 0u);
  std::printf("graph memory ok\n");
  return 0;
}

// cuMemAllocAsync draws from the pool of the stream's device, whichever context is current:
// trimming under pressure must trim that pool. Needs CARVE_FAKE_DEVICES=2.
int PoolOfTheStreamsDevice(const Api& api) {
  size_t free_bytes = 0, limit = 0;
  CHECK_EQ(api.mem_get_info(&free_bytes, &limit), kCudaSuccess);
  CuContext ctx0 = nullptr, ctx1 = nullptr;
  CHECK_EQ(api.device_primary_ctx_retain(&ctx0, 0), kCudaSuccess);
  CHECK_EQ(api.device_primary_ctx_retain(&ctx1, 1), kCudaSuccess);
  CuStream on1 = nullptr;
  CHECK_EQ(api.ctx_set_current(ctx1), kCudaSuccess);
  CHECK_EQ(api.stream_create(&on1, 0), kCudaSuccess);
  CHECK_EQ(api.ctx_set_current(ctx0), kCudaSuccess);  // device 0 current, stream on device 1
  CuDevicePtr p = 0;
  CHECK_EQ(api.mem_alloc_async(&p, limit, on1), kCudaSuccess);
  CHECK_EQ(api.fake_device_bytes(1), limit);
  CHECK_EQ(api.mem_free_async(p, on1), kCudaSuccess);  // cached in device 1's pool
  CHECK_EQ(api.mem_alloc(&p, 1), kCudaSuccess);        // trims device 1's pool to fit
  CHECK_EQ(api.fake_device_bytes(0) + api.fake_device_bytes(1), 1u);
  CHECK_EQ(api.mem_free(p), kCudaSuccess);
  std::printf("stream device pool ok\n");
  return 0;
}

}  // namespace carve::interposer::probe
