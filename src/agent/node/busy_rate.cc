#include "agent/node/busy_rate.h"

#include <algorithm>

namespace carve::agent::node {

double BusyRate::Sample(int64_t busy_ns_total, std::chrono::steady_clock::time_point now) {
  if (!last_at_) {
    last_at_ = now;
    last_busy_ns_ = busy_ns_total;
    return rate_;
  }
  const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(now - *last_at_);
  if (wall < min_interval_ || wall.count() <= 0) return rate_;
  const double busy = static_cast<double>(busy_ns_total - last_busy_ns_);
  rate_ = std::clamp(busy * 100.0 / static_cast<double>(wall.count()), 0.0, 100.0);
  last_at_ = now;
  last_busy_ns_ = busy_ns_total;
  return rate_;
}

}  // namespace carve::agent::node
