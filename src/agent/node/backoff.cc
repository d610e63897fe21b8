#include "agent/node/backoff.h"

#include <algorithm>

namespace carve::agent::node {

Backoff::Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max, uint64_t seed)
    : initial_(std::max(initial, std::chrono::milliseconds(1))),
      max_(std::max(max, initial_)),
      rng_(seed) {}

std::chrono::milliseconds Backoff::Next() {
  std::chrono::milliseconds d = initial_;
  for (int i = 0; i < failures_ && d < max_; ++i) d *= 2;
  d = std::min(d, max_);
  ++failures_;
  std::uniform_int_distribution<int64_t> jitter(d.count() / 2, d.count());
  return std::chrono::milliseconds(jitter(rng_));
}

}  // namespace carve::agent::node
