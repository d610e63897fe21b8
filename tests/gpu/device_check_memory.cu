// device_check's memory modes (device_check.h): every allocation path a PyTorch process uses,
// held to the worker's quota by libcarve-mgpu.so on a real driver.
#include <dlfcn.h>

#include <cstring>

#include "device_check.h"

namespace device_check {
namespace {

__global__ void Touch(char* p) {
  if (threadIdx.x == 0) p[0] = 1;
}

size_t Granularity(const CUmemAllocationProp& prop) {
  size_t g = 0;
  DC_CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  return g;
}

CUmemAllocationProp PropAt(CUmemLocationType type, int id) {
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = type;
  prop.location.id = id;
  return prop;
}

size_t Free() {
  size_t free_bytes = 0, total = 0;
  DC_CU(cuMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

}  // namespace

size_t Room() {
  DC_CHECK(cudaFree(nullptr));
  return Free();
}

int QuotaMalloc() {
  const size_t room = Room();
  void *a = nullptr, *b = nullptr, *c = nullptr;
  DC_CHECK(cudaMalloc(&a, room - 1));
  DC_CHECK(cudaMalloc(&b, 1));
  const cudaError_t over = cudaMalloc(&c, 1);
  (void)cudaGetLastError();
  DC_CHECK(cudaFree(a));
  DC_CHECK(cudaFree(b));
  const size_t after = Free();
  std::printf("room=%zu last_byte=ok one_more=%s room_after=%zu\n", room, cudaGetErrorName(over),
              after);
  return over == cudaErrorMemoryAllocation && after == room ? kPass : kFail;
}

// cuda.h allows cuMemFree on stream-ordered memory; the charge must go with it.
int QuotaAsyncFree() {
  const size_t room = Room();
  cudaStream_t s;
  DC_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* p = nullptr;
  DC_CHECK(cudaMallocAsync(&p, room, s));
  DC_CHECK(cudaStreamSynchronize(s));
  DC_CHECK(cudaFree(p));  // not cudaFreeAsync
  void* q = nullptr;
  const cudaError_t whole = cudaMalloc(&q, room);  // the interposer trims the pool to fit
  (void)cudaGetLastError();
  if (whole == cudaSuccess) DC_CHECK(cudaFree(q));
  const cudaError_t over = cudaMallocAsync(&p, room + 1, s);
  (void)cudaGetLastError();
  std::printf("room=%zu malloc_after_async_free=%s async_over=%s\n", room,
              cudaGetErrorName(whole), cudaGetErrorName(over));
  return whole == cudaSuccess && over == cudaErrorMemoryAllocation ? kPass : kFail;
}

// NCCL's ncclCuMemFree order: retain by address, release, unmap, release the original.
int QuotaVmm() {
  const size_t room = Room();
  int dev = 0;
  DC_CHECK(cudaGetDevice(&dev));
  const CUmemAllocationProp prop = PropAt(CU_MEM_LOCATION_TYPE_DEVICE, dev);
  const size_t g = Granularity(prop);
  CUmemGenericAllocationHandle h = 0, again = 0, over_h = 0;
  const CUresult over = cuMemCreate(&over_h, (room / g + 1) * g, &prop, 0);
  if (over == CUDA_SUCCESS) cuMemRelease(over_h);
  const size_t size = 2 * g;
  DC_CU(cuMemCreate(&h, size, &prop, 0));
  CUdeviceptr va = 0;
  DC_CU(cuMemAddressReserve(&va, size, 0, 0, 0));
  DC_CU(cuMemMap(va, size, 0, h, 0));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  DC_CU(cuMemSetAccess(va, size, &access, 1));
  DC_CU(cuMemRetainAllocationHandle(&again, reinterpret_cast<void*>(va)));
  DC_CU(cuMemRelease(again));
  const size_t while_mapped = Free();
  DC_CU(cuMemUnmap(va, size));
  const size_t after_unmap = Free();  // one reference is left
  DC_CU(cuMemRelease(h));
  DC_CU(cuMemAddressFree(va, size));
  const size_t after = Free();
  std::printf("room=%zu granularity=%zu over=%d charged_mapped=%zu charged_one_ref=%zu "
              "room_after=%zu\n",
              room, g, static_cast<int>(over), room - while_mapped, room - after_unmap, after);
  return over == CUDA_ERROR_OUT_OF_MEMORY && room - while_mapped == size &&
                 room - after_unmap == size && after == room
             ? kPass
             : kFail;
}

// Host memory through cuMemCreate (NCCL's ncclCuMemHostAlloc) is no GPU memory.
int QuotaHost() {
  const size_t room = Room();
  for (CUmemLocationType type : {CU_MEM_LOCATION_TYPE_HOST_NUMA, CU_MEM_LOCATION_TYPE_HOST}) {
    const CUmemAllocationProp prop = PropAt(type, 0);
    size_t g = 0;
    if (cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
        CUDA_SUCCESS) {
      continue;
    }
    const size_t size = (room / g + 1) * g;  // more than the whole quota
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = cuMemCreate(&h, size, &prop, 0);
    if (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_VALUE) continue;
    const size_t during = Free();
    if (r == CUDA_SUCCESS) cuMemRelease(h);
    std::printf("location=%s size=%zu result=%d room=%zu room_while_held=%zu\n",
                type == CU_MEM_LOCATION_TYPE_HOST_NUMA ? "host-numa" : "host", size,
                static_cast<int>(r), room, during);
    return r == CUDA_SUCCESS && during == room ? kPass : kFail;
  }
  std::printf("reason=this driver creates no host-located VMM allocation\n");
  return kUnsupported;
}

// Graph memory: charged while a graph that can map it lives, released once it is gone.
int QuotaGraph() {
  const size_t room = Room();
  const size_t part = room / 10 * 6;
  cudaStream_t s;
  DC_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* a = nullptr;
  DC_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  DC_CHECK(cudaMallocAsync(&a, part, s));
  Touch<<<1, 32, 0, s>>>(static_cast<char*>(a));
  DC_CHECK(cudaFreeAsync(a, s));
  cudaGraph_t graph;
  DC_CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  DC_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  DC_CHECK(cudaGraphLaunch(exec, s));
  DC_CHECK(cudaStreamSynchronize(s));
  int dev = 0;
  DC_CHECK(cudaGetDevice(&dev));
  size_t reserved = 0;
  DC_CHECK(cudaDeviceGetGraphMemAttribute(dev, cudaGraphMemAttrReservedMemCurrent, &reserved));
  void* p = nullptr;
  const cudaError_t beside = cudaMalloc(&p, room - part + 1);
  (void)cudaGetLastError();
  if (beside == cudaSuccess) DC_CHECK(cudaFree(p));
  DC_CHECK(cudaGraphExecDestroy(exec));
  DC_CHECK(cudaGraphDestroy(graph));
  DC_CHECK(cudaDeviceGraphMemTrim(dev));
  const cudaError_t whole = cudaMalloc(&p, room);
  (void)cudaGetLastError();
  if (whole == cudaSuccess) DC_CHECK(cudaFree(p));

  // An explicit allocation node (cudaGraphAddMemAllocNode).
  cudaGraph_t g2;
  DC_CHECK(cudaGraphCreate(&g2, 0));
  cudaMemAllocNodeParams params{};
  params.poolProps.allocType = cudaMemAllocationTypePinned;
  params.poolProps.location.type = cudaMemLocationTypeDevice;
  params.poolProps.location.id = dev;
  params.bytesize = part;
  cudaGraphNode_t node;
  DC_CHECK(cudaGraphAddMemAllocNode(&node, g2, nullptr, 0, &params));
  const size_t charged_node = room - Free();
  DC_CHECK(cudaGraphAddMemFreeNode(&node, g2, &node, 1, params.dptr));
  DC_CHECK(cudaGraphDestroy(g2));
  std::printf("room=%zu captured=%zu driver_reserved=%zu malloc_beside_graph=%s "
              "malloc_after_destroy=%s explicit_node_charged=%zu\n",
              room, part, reserved, cudaGetErrorName(beside), cudaGetErrorName(whole),
              charged_node);
  return beside == cudaErrorMemoryAllocation && whole == cudaSuccess && charged_node >= part
             ? kPass
             : kFail;
}

// The share, as frameworks read the device's size three ways.
int MemInfo(size_t quota) {
  DC_CHECK(cudaFree(nullptr));
  size_t free_bytes = 0, total = 0, device_total = 0;
  DC_CU(cuMemGetInfo(&free_bytes, &total));
  CUdevice dev = 0;
  DC_CU(cuCtxGetDevice(&dev));
  DC_CU(cuDeviceTotalMem(&device_total, dev));
  struct NvmlMemory {
    unsigned long long total, free, used;
  } nvml{};
  unsigned long long nvml_total = 0;
  if (void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW)) {
    using Init = int (*)();
    using Handle = int (*)(unsigned int, void**);
    using Memory = int (*)(void*, NvmlMemory*);
    auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
    auto handle = reinterpret_cast<Handle>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    auto memory = reinterpret_cast<Memory>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    void* device = nullptr;
    if (init && handle && memory && init() == 0 && handle(0, &device) == 0 &&
        memory(device, &nvml) == 0) {
      nvml_total = nvml.total;
    }
  }
  std::printf("quota=%zu cuMemGetInfo_total=%zu cuMemGetInfo_free=%zu cuDeviceTotalMem=%zu "
              "nvml_total=%llu\n",
              quota, total, free_bytes, device_total, nvml_total);
  return total == quota && device_total == quota && nvml_total == quota ? kPass : kFail;
}

}  // namespace device_check
