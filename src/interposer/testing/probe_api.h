// The driver API as mgpu_probe reaches it: one table of entry points, filled the way real programs
// get them (probe_api.cc). Modes:
//   direct            linked symbols (cuMemAlloc_v2, cuLaunchKernel, ...)
//   direct-ptsz       linked per-thread-stream symbols where there are some (cuLaunchKernel_ptsz)
//   dlsym             dlopen("libcuda.so.1") + dlsym of the exported names
//   procaddress       cuGetProcAddress_v2(base name, CUDA 13.0)
//   procaddress-ptsz  the same with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
// Test-only fake exports (carveFake*) are always looked up with dlsym on libcuda.so.1.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "interposer/cuda_abi.h"

namespace carve::interposer::probe {

using PfnMemAddressReserve = CuResult (*)(CuDevicePtr*, size_t, size_t, CuDevicePtr,
                                          unsigned long long);
using PfnStreamCreate = CuResult (*)(CuStream*, unsigned int);
using PfnDevicePrimaryCtxRetain = CuResult (*)(CuContext*, CuDevice);
using PfnCtxSetCurrent = CuResult (*)(CuContext);
using PfnGraphCreate = CuResult (*)(CuGraph*, unsigned int);
using PfnStreamBeginCapture = CuResult (*)(CuStream, int);
using PfnStreamEndCapture = CuResult (*)(CuStream, CuGraph*);
using PfnCtxSynchronize = CuResult (*)();

// X(field, type, base name, plain export, per-thread export)
#define CARVE_PROBE_API(X)                                                                         \
  X(mem_get_info, PfnMemGetInfo, cuMemGetInfo, cuMemGetInfo_v2, cuMemGetInfo_v2)                   \
  X(device_total_mem, PfnDeviceTotalMem, cuDeviceTotalMem, cuDeviceTotalMem_v2,                    \
    cuDeviceTotalMem_v2)                                                                           \
  X(mem_alloc, PfnMemAlloc, cuMemAlloc, cuMemAlloc_v2, cuMemAlloc_v2)                              \
  X(mem_alloc_pitch, PfnMemAllocPitch, cuMemAllocPitch, cuMemAllocPitch_v2, cuMemAllocPitch_v2)    \
  X(mem_alloc_managed, PfnMemAllocManaged, cuMemAllocManaged, cuMemAllocManaged,                   \
    cuMemAllocManaged)                                                                             \
  X(mem_alloc_async, PfnMemAllocAsync, cuMemAllocAsync, cuMemAllocAsync, cuMemAllocAsync_ptsz)     \
  X(mem_alloc_from_pool_async, PfnMemAllocFromPoolAsync, cuMemAllocFromPoolAsync,                  \
    cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz)                                         \
  X(mem_free, PfnMemFree, cuMemFree, cuMemFree_v2, cuMemFree_v2)                                   \
  X(mem_free_async, PfnMemFreeAsync, cuMemFreeAsync, cuMemFreeAsync, cuMemFreeAsync_ptsz)          \
  X(mem_pool_trim_to, PfnMemPoolTrimTo, cuMemPoolTrimTo, cuMemPoolTrimTo, cuMemPoolTrimTo)         \
  X(mem_pool_create, PfnMemPoolCreate, cuMemPoolCreate, cuMemPoolCreate, cuMemPoolCreate)          \
  X(device_get_mem_pool, PfnDeviceGetMemPool, cuDeviceGetMemPool, cuDeviceGetMemPool,              \
    cuDeviceGetMemPool)                                                                            \
  X(mem_create, PfnMemCreate, cuMemCreate, cuMemCreate, cuMemCreate)                               \
  X(mem_release, PfnMemRelease, cuMemRelease, cuMemRelease, cuMemRelease)                          \
  X(mem_retain, PfnMemRetainAllocationHandle, cuMemRetainAllocationHandle,                         \
    cuMemRetainAllocationHandle, cuMemRetainAllocationHandle)                                      \
  X(mem_map, PfnMemMap, cuMemMap, cuMemMap, cuMemMap)                                              \
  X(mem_unmap, PfnMemUnmap, cuMemUnmap, cuMemUnmap, cuMemUnmap)                                    \
  X(mem_address_reserve, PfnMemAddressReserve, cuMemAddressReserve, cuMemAddressReserve,           \
    cuMemAddressReserve)                                                                           \
  X(array_create, PfnArrayCreate, cuArrayCreate, cuArrayCreate_v2, cuArrayCreate_v2)               \
  X(array3d_create, PfnArray3DCreate, cuArray3DCreate, cuArray3DCreate_v2, cuArray3DCreate_v2)     \
  X(array_destroy, PfnArrayDestroy, cuArrayDestroy, cuArrayDestroy, cuArrayDestroy)                \
  X(mipmapped_array_create, PfnMipmappedArrayCreate, cuMipmappedArrayCreate,                       \
    cuMipmappedArrayCreate, cuMipmappedArrayCreate)                                                \
  X(mipmapped_array_destroy, PfnMipmappedArrayDestroy, cuMipmappedArrayDestroy,                    \
    cuMipmappedArrayDestroy, cuMipmappedArrayDestroy)                                              \
  X(launch_kernel, PfnLaunchKernel, cuLaunchKernel, cuLaunchKernel, cuLaunchKernel_ptsz)           \
  X(launch_kernel_ex, PfnLaunchKernelEx, cuLaunchKernelEx, cuLaunchKernelEx,                       \
    cuLaunchKernelEx_ptsz)                                                                         \
  X(launch_cooperative_kernel, PfnLaunchCooperativeKernel, cuLaunchCooperativeKernel,              \
    cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz)                                     \
  X(graph_launch, PfnGraphLaunch, cuGraphLaunch, cuGraphLaunch, cuGraphLaunch_ptsz)                \
  X(begin_capture, PfnStreamBeginCapture, cuStreamBeginCapture, cuStreamBeginCapture_v2,           \
    cuStreamBeginCapture_v2_ptsz)                                                                  \
  X(end_capture, PfnStreamEndCapture, cuStreamEndCapture, cuStreamEndCapture,                      \
    cuStreamEndCapture_ptsz)                                                                       \
  X(instantiate, PfnGraphInstantiateWithFlags, cuGraphInstantiate, cuGraphInstantiateWithFlags,    \
    cuGraphInstantiateWithFlags)                                                                   \
  X(graph_create, PfnGraphCreate, cuGraphCreate, cuGraphCreate, cuGraphCreate)                     \
  X(graph_add_mem_alloc_node, PfnGraphAddMemAllocNode, cuGraphAddMemAllocNode,                     \
    cuGraphAddMemAllocNode, cuGraphAddMemAllocNode)                                                \
  X(graph_add_mem_free_node, PfnGraphAddMemFreeNode, cuGraphAddMemFreeNode, cuGraphAddMemFreeNode, \
    cuGraphAddMemFreeNode)                                                                         \
  X(graph_add_node, PfnGraphAddNodeV2, cuGraphAddNode, cuGraphAddNode_v2, cuGraphAddNode_v2)       \
  X(graph_exec_destroy, PfnGraphExecDestroy, cuGraphExecDestroy, cuGraphExecDestroy,               \
    cuGraphExecDestroy)                                                                            \
  X(graph_destroy, PfnGraphDestroy, cuGraphDestroy, cuGraphDestroy, cuGraphDestroy)                \
  X(device_graph_mem_trim, PfnDeviceGraphMemTrim, cuDeviceGraphMemTrim, cuDeviceGraphMemTrim,      \
    cuDeviceGraphMemTrim)                                                                          \
  X(ctx_synchronize, PfnCtxSynchronize, cuCtxSynchronize, cuCtxSynchronize, cuCtxSynchronize)      \
  X(stream_create, PfnStreamCreate, cuStreamCreate, cuStreamCreate, cuStreamCreate)                \
  X(device_primary_ctx_retain, PfnDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain,                \
    cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)                                            \
  X(ctx_set_current, PfnCtxSetCurrent, cuCtxSetCurrent, cuCtxSetCurrent, cuCtxSetCurrent)          \
  X(thread_exchange_capture_mode, PfnThreadExchangeStreamCaptureMode,                              \
    cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode,                          \
    cuThreadExchangeStreamCaptureMode)

struct Api {
#define CARVE_FIELD(field, type, base, plain, ptsz) type field = nullptr;
  CARVE_PROBE_API(CARVE_FIELD)
#undef CARVE_FIELD
  // The fake's test-only exports.
  int64_t (*fake_busy_ns)() = nullptr;
  uint64_t (*fake_allocated)() = nullptr;
  uint64_t (*fake_device_bytes)(int) = nullptr;
  uint64_t (*fake_host_bytes)() = nullptr;
  uint64_t (*fake_legacy_ops)() = nullptr;
  uint64_t (*fake_graph_reserved)(int) = nullptr;
};

// The table for `mode` (see above); exits with a message when an entry cannot be resolved.
Api ApiFor(const std::string& mode);

[[noreturn]] void Fail(const char* what);

#define CHECK_EQ(got, want)                                                                       \
  do {                                                                                            \
    auto g_ = (got);                                                                              \
    auto w_ = (want);                                                                             \
    if (g_ != w_) {                                                                               \
      std::fprintf(stderr, "mgpu_probe: %s:%d: %s = %lld, want %lld\n", __FILE__, __LINE__, #got, \
                   static_cast<long long>(g_), static_cast<long long>(w_));                       \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

// Bytes the worker holds, as cuMemGetInfo reports them (total - free).
uint64_t Used(const Api& api);

// The actions, by file: probe_memory.cc, probe_launch.cc.
int Exact(const Api& api, uint64_t limit);
int Paths(const Api& api);
int Pitch(const Api& api, size_t width, size_t height);
int Vmm(const Api& api);
int GraphMemory(const Api& api);
int PoolOfTheStreamsDevice(const Api& api);
int LaunchLoop(const Api& api, double seconds, const std::string& kind);
int CaptureElsewhere(const Api& api, double seconds, const std::string& kind,
                     bool per_thread_default);

}  // namespace carve::interposer::probe
