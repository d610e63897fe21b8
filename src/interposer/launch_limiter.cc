#include "interposer/launch_limiter.h"

#include <algorithm>

namespace carve::interposer {

LaunchLimiter::LaunchLimiter(SharedBucket& bucket, const LedgerSettings& settings,
                             const Clock& clock)
    : bucket_(bucket),
      clock_(clock),
      enabled_(!settings.burstable && settings.core_percent < 100),
      percent_(settings.core_percent),
      capacity_ns_(int64_t{settings.window_ms} * 1'000'000 * settings.core_percent / 100) {}

int64_t LaunchLimiter::NowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.Now().time_since_epoch())
      .count();
}

void LaunchLimiter::Refill(int64_t now_ns) {
  int64_t last = bucket_.last_refill_ns.load(std::memory_order_relaxed);
  // Refills closer together than this are coalesced (the interval is credited by the next one):
  // it keeps two compare-exchanges on the shared line off most launches.
  constexpr int64_t kMinRefillIntervalNs = 20'000;
  if (now_ns - last < kMinRefillIntervalNs) return;
  // One caller wins the interval [last, now); the others see a newer last and add nothing.
  if (!bucket_.last_refill_ns.compare_exchange_strong(last, now_ns, std::memory_order_relaxed)) {
    return;
  }
  // A first refill (last == 0) would credit the whole uptime; the cap below bounds it anyway.
  const int64_t elapsed = now_ns - last;
  const int64_t add = elapsed > capacity_ns_ * 100 ? capacity_ns_ : elapsed * percent_ / 100;
  int64_t tokens = bucket_.tokens_ns.load(std::memory_order_relaxed);
  while (!bucket_.tokens_ns.compare_exchange_weak(tokens, std::min(capacity_ns_, tokens + add),
                                                  std::memory_order_relaxed)) {
  }
}

std::chrono::nanoseconds LaunchLimiter::Admit() {
  if (!enabled_) return std::chrono::nanoseconds{0};
  Refill(NowNs());
  int64_t tokens = bucket_.tokens_ns.load(std::memory_order_relaxed);
  if (tokens > 0) {
    const int64_t estimate = EstimateNs();
    bucket_.tokens_ns.fetch_sub(estimate, std::memory_order_relaxed);
    bucket_.busy_ns_total.fetch_add(estimate, std::memory_order_relaxed);
    bucket_.launches_total.fetch_add(1, std::memory_order_relaxed);
    return std::chrono::nanoseconds{0};
  }
  // Time for the refill to bring the bucket just above zero.
  return std::chrono::nanoseconds{(-tokens) * 100 / percent_ + 1};
}

void LaunchLimiter::Settle(int64_t estimated_ns, int64_t measured_ns) {
  if (measured_ns < 0 || !enabled_) return;
  bucket_.tokens_ns.fetch_sub(measured_ns - estimated_ns, std::memory_order_relaxed);
  bucket_.busy_ns_total.fetch_add(measured_ns - estimated_ns, std::memory_order_relaxed);
  if (measured_ns == 0) return;
  // Running average over ~8 launches: adapts within a few launches, ignores one-off outliers.
  int64_t est = estimate_ns_.load(std::memory_order_relaxed);
  int64_t next = est == 0 ? measured_ns : (est * 7 + measured_ns) / 8;
  estimate_ns_.store(next, std::memory_order_relaxed);
}

void LaunchLimiter::NoteWait(std::chrono::nanoseconds waited) {
  bucket_.throttled_ns_total.fetch_add(waited.count(), std::memory_order_relaxed);
}

}  // namespace carve::interposer
