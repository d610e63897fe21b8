// Device timing of launches for the compute limiter: a pair of events recorded around each
// admitted launch on its stream, read back (never waited on) when a later launch polls. The
// elapsed time between them is the busy time the launch cost on the device, including a graph's
// whole duration, measured by the GPU itself rather than sampled from NVML utilization.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "interposer/cuda_abi.h"
#include "interposer/launch_limiter.h"

namespace carve::interposer::shell {

class LaunchTimer {
 public:
  struct Pair {
    CuEvent start = nullptr;
    CuEvent end = nullptr;
  };

  explicit LaunchTimer(LaunchLimiter& limiter) : limiter_(limiter) {}

  // Settles every measured launch whose end event has completed. Never blocks on the device.
  void Poll();
  // Blocks until the oldest launch in flight has finished and settles it. Used while no launch
  // has been measured yet: with no estimate, launches would be charged nothing and the limiter
  // could queue far more than the share before the first measurement came back.
  void SettleOldest();
  bool HasInFlight();
  // A pair to record around the next launch; start/end are null when none can be had (too many
  // launches in flight, or event creation failed): the launch then stays at its estimate.
  Pair Acquire();
  // Hands back a pair whose launch was recorded (both events) and charged `estimate_ns`.
  void Track(Pair pair, int64_t estimate_ns);
  // Hands back a pair that was not recorded.
  void Return(Pair pair);

 private:
  static constexpr size_t kMaxInFlight = 4096;
  struct InFlight {
    Pair pair;
    int64_t estimate_ns;
  };
  LaunchLimiter& limiter_;
  std::mutex mu_;
  std::deque<InFlight> in_flight_;  // guarded by mu_
  std::vector<Pair> spare_;         // guarded by mu_
};

}  // namespace carve::interposer::shell
