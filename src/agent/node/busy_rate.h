// BusyRate: a worker's achieved compute share, from the cumulative GPU busy time its compute
// limiter charges (interposer::SharedBucket::busy_ns_total). Between two samples the share is the
// busy time added over the wall time passed, in percent of the card; e.g. 30 ms of busy time
// charged over a 100 ms interval is 30%.
//
// A sample taken sooner than `min_interval` after the previous one returns the previous rate
// (short intervals make a noisy rate); the first sample returns -1 ("not measured yet"). The rate
// is clamped to [0, 100]: the limiter charges an estimate at launch and settles it when the
// kernel's measured time is known, so a short interval can see a little more than wall time.
// Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace carve::agent::node {

class BusyRate {
 public:
  explicit BusyRate(std::chrono::milliseconds min_interval = std::chrono::seconds(1))
      : min_interval_(min_interval) {}

  double Sample(int64_t busy_ns_total, std::chrono::steady_clock::time_point now);

 private:
  std::chrono::milliseconds min_interval_;
  std::optional<std::chrono::steady_clock::time_point> last_at_;
  int64_t last_busy_ns_ = 0;
  double rate_ = -1;
};

}  // namespace carve::agent::node
