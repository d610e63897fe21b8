// The compute-share limiter: holds a worker's measured GPU busy time to its core percentage.
//
// A token bucket shared by all processes of the worker (SharedBucket in the ledger) is refilled
// at core_percent/100 ns of busy time per ns of wall time, capped at one window's worth
// (window_ms x core_percent / 100). A launch may start while the bucket is positive and is
// charged, at launch time, this process's running estimate of a launch's busy time; when the
// device reports the launch's real duration (events around it, see hooks_launch.cc) the
// difference is charged, so the bucket converges on measured busy time. While the bucket is
// empty, launches wait for the deficit to refill.
//
// Worked example, 30% and a 100 ms window: the bucket holds at most 30 ms. A loop of 2 ms kernels
// starts ~15 of them, then waits ~6.7 ms of refill per kernel: 2 ms busy per 6.7 ms of wall time.
//
// Bounds: the limiter acts before a launch and cannot preempt a running kernel, so a kernel
// longer than the window overshoots by its length; a graph launch is charged as one launch with
// its whole duration. It applies whether the worker is alone on the card or not; it is off when
// core_percent is 100 or the share is burstable.
//
// Thread-safety: all methods are lock-free and safe from any thread of any process.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/clock.h"
#include "interposer/ledger.h"

namespace carve::interposer {

class LaunchLimiter {
 public:
  LaunchLimiter(SharedBucket& bucket, const LedgerSettings& settings, const Clock& clock);

  bool enabled() const { return enabled_; }
  // Zero: launch now (the estimate has been charged). Otherwise wait this long and ask again.
  std::chrono::nanoseconds Admit();
  // Charges the difference between what a launch was estimated at and what it measured. A
  // refund (measured 0 for a launch that failed) counts toward neither busy time nor estimate.
  void Settle(int64_t estimated_ns, int64_t measured_ns);
  // The busy time a launch is charged before it is measured (a running average).
  int64_t EstimateNs() const { return estimate_ns_.load(std::memory_order_relaxed); }
  // Records `waited` as throttled time, for metrics.
  void NoteWait(std::chrono::nanoseconds waited);

  int64_t capacity_ns() const { return capacity_ns_; }

 private:
  int64_t NowNs() const;
  void Refill(int64_t now_ns);

  SharedBucket& bucket_;
  const Clock& clock_;
  const bool enabled_;
  const int64_t percent_;
  const int64_t capacity_ns_;
  std::atomic<int64_t> estimate_ns_{0};
};

}  // namespace carve::interposer
