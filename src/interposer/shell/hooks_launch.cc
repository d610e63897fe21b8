// Launch hooks: the compute limiter admits each launch (waiting while the worker's share is
// spent) and times it with a pair of device events. When the limiter is off (core 100% or
// burstable) or the process is not a worker, a launch costs one branch before the real call.
#include <time.h>

#include "interposer/shell/hook_support.h"

namespace carve::interposer::shell {
namespace {

void SleepFor(std::chrono::nanoseconds d) {
  timespec ts{static_cast<time_t>(d.count() / 1'000'000'000),
              static_cast<long>(d.count() % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

// Device timing costs two event records per timed launch, so launches are timed at random with
// probability 1/kSampleOneIn (always until the first measurement). Untimed launches are charged
// the running estimate, timed ones are settled to what they measured; random rather than every
// n-th, so that a repeating pattern of short and long kernels cannot bias the estimate.
constexpr uint32_t kSampleOneIn = 8;

bool SampleThisLaunch() {
  thread_local uint32_t state =
      0x9E3779B9u ^ static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&state));
  state ^= state << 13;  // xorshift32
  state ^= state >> 17;
  state ^= state << 5;
  return state % kSampleOneIn == 0;
}

// True when the launch only adds a node to a graph being captured (no device time is spent and
// events recorded on the stream would become graph nodes too), or when the stream cannot be
// asked (the legacy stream while a blocking stream captures: the launch itself fails then, and
// an event recorded there would invalidate that capture).
bool Untimed(CuStream stream) {
  std::optional<int> status = CaptureStatus(stream);
  return !status.has_value() || *status != kCuStreamCaptureStatusNone;
}

// `per_thread`: the launch came through a _ptsz entry point, where a NULL stream is the calling
// thread's per-thread default stream; the timing events and the capture query must name that
// stream too (hook_support.h EffectiveStream).
template <typename F>
CuResult Limited(CuStream launch_stream, bool per_thread, F&& launch) noexcept {
  try {
    Runtime* rt = GetRuntime();
    if (rt == nullptr || rt->limiter == nullptr || !rt->limiter->enabled()) return launch();
    const CuStream stream = EffectiveStream(launch_stream, per_thread);
    if (Untimed(stream)) return launch();
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

using namespace carve;                     // NOLINT: C ABI shell
using namespace carve::interposer;         // NOLINT
using namespace carve::interposer::shell;  // NOLINT

#define CARVE_LAUNCH_KERNEL(name, per_thread)                                                    \
  CARVE_EXPORT CuResult name(CuFunction f, unsigned int gx, unsigned int gy, unsigned int gz,    \
                             unsigned int bx, unsigned int by, unsigned int bz, unsigned int sm, \
                             CuStream stream, void** params, void** extra) {                     \
    static const auto real = Real<PfnLaunchKernel>(Fn::k_##name);                                \
    return Limited(stream, per_thread,                                                           \
                   [&] { return real(f, gx, gy, gz, bx, by, bz, sm, stream, params, extra); });  \
  }
CARVE_LAUNCH_KERNEL(cuLaunchKernel, false)
CARVE_LAUNCH_KERNEL(cuLaunchKernel_ptsz, true)

#define CARVE_LAUNCH_COOPERATIVE(name, per_thread)                                               \
  CARVE_EXPORT CuResult name(CuFunction f, unsigned int gx, unsigned int gy, unsigned int gz,    \
                             unsigned int bx, unsigned int by, unsigned int bz, unsigned int sm, \
                             CuStream stream, void** params) {                                   \
    static const auto real = Real<PfnLaunchCooperativeKernel>(Fn::k_##name);                     \
    return Limited(stream, per_thread,                                                           \
                   [&] { return real(f, gx, gy, gz, bx, by, bz, sm, stream, params); });         \
  }
CARVE_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel, false)
CARVE_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel_ptsz, true)

#define CARVE_LAUNCH_EX(name, per_thread)                                               \
  CARVE_EXPORT CuResult name(const CuLaunchConfig* config, CuFunction f, void** params, \
                             void** extra) {                                            \
    static const auto real = Real<PfnLaunchKernelEx>(Fn::k_##name);                     \
    return Limited(config != nullptr ? config->hStream : nullptr, per_thread,           \
                   [&] { return real(config, f, params, extra); });                     \
  }
CARVE_LAUNCH_EX(cuLaunchKernelEx, false)
CARVE_LAUNCH_EX(cuLaunchKernelEx_ptsz, true)

#define CARVE_GRAPH_LAUNCH(name, per_thread)                                \
  CARVE_EXPORT CuResult name(CuGraphExec exec, CuStream stream) {           \
    static const auto real = Real<PfnGraphLaunch>(Fn::k_##name);            \
    return Limited(stream, per_thread, [&] { return real(exec, stream); }); \
  }
CARVE_GRAPH_LAUNCH(cuGraphLaunch, false)
CARVE_GRAPH_LAUNCH(cuGraphLaunch_ptsz, true)
