// Internal to libcarve-mgpu.so: what several hook files share. The memory hooks' admit /
// allocate / record-or-undo pattern, the meaning of a stream handle (which stream, which device,
// captured or not) and the thread's capture-mode guard.
#pragma once

#include <optional>
#include <utility>

#include "interposer/cuda_status.h"
#include "interposer/shell/hooks.h"

namespace carve::interposer::shell {

template <typename F>
CuResult Guard(F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    return kCudaErrorUnknown;
  }
}

// The stream a call means. With a _ptsz entry point a NULL stream is the calling thread's
// per-thread default stream (cuda.h: CU_STREAM_PER_THREAD, "an implicit stream with per-thread
// synchronization behavior"); handing NULL on to the plain cuEventRecord/cuStreamIsCapturing
// would name the legacy stream instead, which synchronizes with every blocking stream.
inline CuStream EffectiveStream(CuStream stream, bool per_thread) {
  if (!per_thread || stream != nullptr) return stream;
  return reinterpret_cast<CuStream>(kCuStreamPerThread);  // NOLINT(performance-no-int-to-ptr)
}

// What cuStreamIsCapturing says about `stream`: its CUstreamCaptureStatus, or nullopt when the
// query itself fails (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT on the legacy stream while a blocking
// stream captures; anything done on that stream would then fail or invalidate the capture).
std::optional<int> CaptureStatus(CuStream stream);

// The graph `stream` is being captured into (cuStreamGetCaptureInfo); nullopt when it is not
// capturing. A capturing stream whose graph the driver cannot name yields a null graph.
std::optional<CuGraph> CapturedGraph(CuStream stream);

// The device of `stream` (cuda.h cuMemAllocAsync: "The allocation comes from the memory pool
// current to the stream's device"): cuStreamGetDevice where the driver has it (CUDA 12.8+), else
// the stream's context made current for the question; the special handles name the current
// context's device. -1 when nothing answers.
CuDevice StreamDevice(CuStream stream);

// Sets the calling thread's capture mode to relaxed for its lifetime (cuda.h
// cuThreadExchangeStreamCaptureMode, push-pop). While another thread captures in global mode,
// "potentially unsafe" calls such as cuEventQuery and cuEventSynchronize from this thread would
// fail and invalidate that capture; in relaxed mode they are allowed (PyTorch's NCCL watchdog
// polls its events the same way, pytorch#103503 / #104487).
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode();
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  int saved_ = kCuStreamCaptureModeRelaxed;
  bool swapped_ = false;
};

// Whether memory at `location` counts against the GPU quota: device memory does; host, host NUMA
// and host-NUMA-current memory (pinned host allocations, NCCL's ncclCuMemHostAlloc) do not.
// Unknown location types are charged: an upper bound.
bool ChargedLocation(const CuMemLocation& location);

// Trims every pool that holds freed-but-cached bytes and releases what the driver gave back;
// the graph pools only while no graph that may hold graph allocations is alive.
void TrimPools(Runtime& rt);
// Admit `bytes`; on a refusal trim the pools and try once more.
Status AdmitWithTrim(Runtime& rt, uint64_t bytes);

// The same for an allocation from the pool with ledger key `pool`, whose cache is reused first;
// then `alloc` (the driver's result; the pointer is read from `*dptr` after a success) is recorded
// against that pool or undone.
template <typename Alloc>
CuResult ChargedFromPool(Runtime& rt, uint64_t pool, uint64_t bytes, const CuDevicePtr* dptr,
                         Alloc&& alloc) {
  Status s = rt.account->AdmitFromPool(pool, bytes);
  if (!s.ok() && !rt.account->PoolsWithCache().empty()) {
    TrimPools(rt);
    s = rt.account->AdmitFromPool(pool, bytes);
  }
  if (!s.ok()) return ToCuResult(s);
  CuResult r = alloc();
  if (r != kCudaSuccess) {
    rt.account->AbortFromPool(pool, bytes);
    return r;
  }
  rt.account->RecordFromPool(pool, *dptr, bytes);
  return r;
}

// Admit, allocate, then record or undo. `alloc` returns the driver's result and the handle.
template <typename Alloc>
CuResult Charged(uint64_t bytes, AllocationKind kind, Alloc&& alloc) {
  Runtime* rt = GetRuntime();
  if (rt == nullptr) return alloc().first;
  if (rt->broken) return ToCuResult(FailedPrecondition(rt->broken_reason));
  if (Status s = AdmitWithTrim(*rt, bytes); !s.ok()) return ToCuResult(s);
  auto [r, handle] = alloc();
  if (r != kCudaSuccess) {
    rt->account->Abort(bytes);
    return r;
  }
  rt->account->Record(kind, handle, bytes);
  return r;
}

template <typename Free>
CuResult Released(AllocationKind kind, uint64_t handle, Free&& free_fn) {
  CuResult r = free_fn();
  Runtime* rt = GetRuntime();
  if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr) {
    rt->account->Forget(kind, handle);
  }
  return r;
}

}  // namespace carve::interposer::shell
