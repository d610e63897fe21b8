// Internal to libcarve-mgpu.so: the table of hooked driver entry points, the real driver behind
// them, and the per-process runtime (ledger, account, limiter) the hooks share.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "interposer/cuda_abi.h"
#include "interposer/launch_limiter.h"
#include "interposer/ledger.h"
#include "interposer/memory_account.h"
#include "interposer/shell/launch_timer.h"

#define CARVE_EXPORT extern "C" __attribute__((visibility("default")))

// Every exported CUDA hook, by its exact symbol name. cuMemAlloc, cuMemAllocPitch, cuMemGetInfo,
// cuDeviceTotalMem, cuArrayCreate and cuArray3DCreate without _v2 are the 32-bit CUDA <= 3.1 ABI.
// clang-format off
#define CARVE_CUDA_HOOKS(X)                                                                      \
  /* memory: queries, plain, pitched, managed */                                                 \
  X(cuMemGetInfo_v2) X(cuMemGetInfo) X(cuDeviceTotalMem_v2) X(cuDeviceTotalMem)                  \
  X(cuMemAlloc_v2) X(cuMemAlloc) X(cuMemAllocPitch_v2) X(cuMemAllocPitch) X(cuMemAllocManaged)   \
  X(cuMemFree_v2)                                                                                \
  /* stream-ordered pools */                                                                     \
  X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) X(cuMemAllocFromPoolAsync)                          \
  X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz) X(cuMemPoolTrimTo)    \
  X(cuMemPoolCreate)                                                                             \
  /* VMM */                                                                                      \
  X(cuMemCreate) X(cuMemRelease) X(cuMemRetainAllocationHandle) X(cuMemMap) X(cuMemUnmap)        \
  /* arrays */                                                                                   \
  X(cuArrayCreate_v2) X(cuArrayCreate) X(cuArray3DCreate_v2) X(cuArray3DCreate)                  \
  X(cuArrayDestroy) X(cuMipmappedArrayCreate) X(cuMipmappedArrayDestroy)                         \
  /* graph memory and the graphs that may own it */                                              \
  X(cuGraphAddMemAllocNode) X(cuGraphAddMemFreeNode) X(cuGraphAddNode) X(cuGraphAddNode_v2)      \
  X(cuDeviceGraphMemTrim) X(cuGraphInstantiate) X(cuGraphInstantiate_v2)                         \
  X(cuGraphInstantiateWithFlags) X(cuGraphInstantiateWithParams)                                 \
  X(cuGraphInstantiateWithParams_ptsz) X(cuGraphDestroy) X(cuGraphExecDestroy)                   \
  /* launches */                                                                                 \
  X(cuLaunchKernel) X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz)          \
  X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernel_ptsz) X(cuGraphLaunch)                \
  X(cuGraphLaunch_ptsz)                                                                          \
  /* resolution */                                                                               \
  X(cuGetProcAddress) X(cuGetProcAddress_v2)

// Driver entry points the interposer calls itself without hooking them.
#define CARVE_CUDA_HELPERS(X)                                                                    \
  X(cuCtxGetDevice) X(cuDeviceGetMemPool) X(cuMemPoolGetAttribute) X(cuEventCreate)              \
  X(cuEventRecord) X(cuEventQuery) X(cuEventElapsedTime_v2) X(cuEventElapsedTime)                \
  X(cuStreamIsCapturing) X(cuEventDestroy_v2) X(cuEventSynchronize) X(cuStreamGetDevice)         \
  X(cuStreamGetCtx) X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2)                                 \
  X(cuThreadExchangeStreamCaptureMode) X(cuStreamGetCaptureInfo_v3) X(cuStreamGetCaptureInfo_v2) \
  X(cuDeviceGetGraphMemAttribute)
// clang-format on

// glibc's dlsym, set by the first RealDlsym call; the dlsym entry point jumps to it.
extern "C" __attribute__((visibility("hidden"))) void* carve_real_dlsym;

namespace carve::interposer::shell {

// Where the agent bind-mounts a worker's ledger inside its container, for processes that were
// started with neither CARVE_MGPU_LEDGER nor an inherited ledger descriptor (ssh, su, env -i).
inline constexpr const char* kContainerLedgerPath = "/run/carve/mgpu.ledger";

enum class Fn {
#define CARVE_ENUM(name) k_##name,
  CARVE_CUDA_HOOKS(CARVE_ENUM) CARVE_CUDA_HELPERS(CARVE_ENUM)
#undef CARVE_ENUM
      kCount
};
inline constexpr int kHookCount = 0
#define CARVE_COUNT(name) +1  // NOLINT(bugprone-macro-parentheses): a term of a sum
    CARVE_CUDA_HOOKS(CARVE_COUNT)
#undef CARVE_COUNT
    ;

// The real libcuda entry for `fn` (nullptr when the driver lacks it). Thread-safe; resolves all
// entries on first use by dlopen'ing libcuda.so.1 and asking it, not the global scope.
void* RealFn(Fn fn);
template <typename Pfn>
Pfn Real(Fn fn) {
  return reinterpret_cast<Pfn>(RealFn(fn));
}
// Calls the real entry `fn`; CUDA_ERROR_NOT_SUPPORTED where this driver lacks it (a program
// linked against a newer driver binds to our export even when the installed libcuda has none).
template <typename Pfn, typename... Args>
CuResult CallReal(Fn fn, Args... args) {
  const auto f = Real<Pfn>(fn);
  return f == nullptr ? kCudaErrorNotSupported : f(args...);
}
// Name and wrapper of hook `i` (0 <= i < kHookCount).
const char* HookName(int i);
void* HookWrapper(int i);
// The wrapper for exported symbol `name`, or nullptr if it is not hooked. NVML hooks included.
void* WrapperFor(const char* name);
// glibc's dlsym, found with dlvsym so that our own dlsym export does not shadow it. Resolving
// RTLD_NEXT through it means "after libcarve-mgpu.so"; only hooked names may be looked up so.
void* RealDlsym(void* handle, const char* name);

struct Runtime {
  std::unique_ptr<Ledger> ledger;
  std::unique_ptr<MemoryAccount> account;
  std::unique_ptr<LaunchLimiter> limiter;
  std::unique_ptr<LaunchTimer> timer;
  // Set when CARVE_MGPU_LEDGER named a ledger that cannot be opened: allocations then fail
  // (fail closed) instead of running unlimited, and `broken_reason` says why.
  bool broken = false;
  std::string broken_reason;
};

// The runtime of this process, created on the first hooked call; nullptr when no ledger is
// configured (the process is not an mGPU worker: every hook passes straight through).
// Never throws.
Runtime* GetRuntime();

// Values captured from the environment when the library was loaded, for re-injection into
// children (hooks_exec.cc): this library's path and the ledger path, if any.
const char* SelfPath();
const char* LedgerPathFromEnv();
// Whether, at load time, this process had a ledger to enforce (variable or inherited descriptor).
bool IsWorkerAtLoad();

}  // namespace carve::interposer::shell
