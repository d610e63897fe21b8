// Launch hooks: the compute limiter admits each launch (waiting while the worker's share is
// spent) and times it with a pair of device events. When the limiter is off (core 100% or
// burstable) or the process is not a worker, a launch costs one branch before the real call.
#include <time.h>

#include "interposer/shell/hooks.h"

namespace carve::interposer::shell {
namespace {

void SleepFor(std::chrono::nanoseconds d) {
  timespec ts{static_cast<time_t>(d.count() / 1'000'000'000),
              static_cast<long>(d.count() % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

// True when `stream` is being captured into a graph: the launch then only adds a node (no device
// time is spent) and events recorded on it would become graph nodes too, so it passes untouched.
bool Capturing(CuStream stream) {
  static const auto is_capturing = Real<PfnStreamIsCapturing>(Fn::k_cuStreamIsCapturing);
  int status = kCuStreamCaptureStatusNone;
  if (is_capturing == nullptr) return false;
  CuResult r = is_capturing(stream, &status);
  return r != kCudaSuccess || status != kCuStreamCaptureStatusNone;
}

// Device timing costs two event records per timed launch, so launches are timed at random with
// probability 1/kSampleOneIn (always until the first measurement). Untimed launches are charged
// the running estimate, timed ones are settled to what they measured; random rather than every
// n-th, so that a repeating pattern of short and long kernels cannot bias the estimate.
constexpr uint32_t kSampleOneIn = 8;

bool SampleThisLaunch() {
  thread_local uint32_t state = 0x9E3779B9u ^ static_cast<uint32_t>(
                                                  reinterpret_cast<uintptr_t>(&state));
  state ^= state << 13;  // xorshift32
  state ^= state >> 17;
  state ^= state << 5;
  return state % kSampleOneIn == 0;
}

template <typename F>
CuResult Limited(CuStream stream, F&& launch) noexcept {
  try {
    Runtime* rt = GetRuntime();
    if (rt == nullptr || rt->limiter == nullptr || !rt->limiter->enabled() || Capturing(stream)) {
      return launch();
    }
    LaunchLimiter& limiter = *rt->limiter;
    if (limiter.EstimateNs() == 0 && rt->timer->HasInFlight()) rt->timer->SettleOldest();
    for (auto wait = limiter.Admit(); wait.count() > 0; wait = limiter.Admit()) {
      SleepFor(wait);
      limiter.NoteWait(wait);
      rt->timer->Poll();
    }
    const int64_t estimate = limiter.EstimateNs();
    if (estimate > 0 && !SampleThisLaunch()) {
      CuResult r = launch();
      if (r != kCudaSuccess) limiter.Settle(estimate, 0);  // nothing ran: refund the charge
      return r;
    }
    static const auto record = Real<PfnEventRecord>(Fn::k_cuEventRecord);
    rt->timer->Poll();  // settle earlier timed launches; only timed launches pay for it
    LaunchTimer::Pair pair = rt->timer->Acquire();
    bool timed = pair.start != nullptr && record(pair.start, stream) == kCudaSuccess;
    CuResult r = launch();
    if (r != kCudaSuccess) {
      limiter.Settle(estimate, 0);  // nothing ran: refund the charge
      rt->timer->Return(pair);
      return r;
    }
    timed = timed && record(pair.end, stream) == kCudaSuccess;
    if (timed) {
      rt->timer->Track(pair, estimate);
    } else {
      rt->timer->Return(pair);
    }
    return r;
  } catch (...) {
    return kCudaErrorUnknown;
  }
}

}  // namespace
}  // namespace carve::interposer::shell

using namespace carve;                      // NOLINT: C ABI shell
using namespace carve::interposer;         // NOLINT
using namespace carve::interposer::shell;  // NOLINT

#define CARVE_LAUNCH_KERNEL(name)                                                               \
  CARVE_EXPORT CuResult name(CuFunction f, unsigned int gx, unsigned int gy, unsigned int gz,   \
                             unsigned int bx, unsigned int by, unsigned int bz, unsigned int sm, \
                             CuStream stream, void** params, void** extra) {                    \
    static const auto real = Real<PfnLaunchKernel>(Fn::k_##name);                               \
    return Limited(stream,                                                                      \
                   [&] { return real(f, gx, gy, gz, bx, by, bz, sm, stream, params, extra); }); \
  }
CARVE_LAUNCH_KERNEL(cuLaunchKernel)
CARVE_LAUNCH_KERNEL(cuLaunchKernel_ptsz)

#define CARVE_LAUNCH_COOPERATIVE(name)                                                          \
  CARVE_EXPORT CuResult name(CuFunction f, unsigned int gx, unsigned int gy, unsigned int gz,   \
                             unsigned int bx, unsigned int by, unsigned int bz, unsigned int sm, \
                             CuStream stream, void** params) {                                  \
    static const auto real = Real<PfnLaunchCooperativeKernel>(Fn::k_##name);                    \
    return Limited(stream, [&] { return real(f, gx, gy, gz, bx, by, bz, sm, stream, params); }); \
  }
CARVE_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel)
CARVE_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel_ptsz)

#define CARVE_LAUNCH_EX(name)                                                                  \
  CARVE_EXPORT CuResult name(const CuLaunchConfig* config, CuFunction f, void** params,        \
                             void** extra) {                                                   \
    static const auto real = Real<PfnLaunchKernelEx>(Fn::k_##name);                           \
    return Limited(config != nullptr ? config->hStream : nullptr,                              \
                   [&] { return real(config, f, params, extra); });                            \
  }
CARVE_LAUNCH_EX(cuLaunchKernelEx)
CARVE_LAUNCH_EX(cuLaunchKernelEx_ptsz)

#define CARVE_GRAPH_LAUNCH(name)                                                          \
  CARVE_EXPORT CuResult name(CuGraphExec exec, CuStream stream) {                         \
    static const auto real = Real<PfnGraphLaunch>(Fn::k_##name);                          \
    return Limited(stream, [&] { return real(exec, stream); });                           \
  }
CARVE_GRAPH_LAUNCH(cuGraphLaunch)
CARVE_GRAPH_LAUNCH(cuGraphLaunch_ptsz)
