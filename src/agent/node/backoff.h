// Backoff: the agent's retry pacing when the server cannot be reached. Exponential with jitter:
// the n-th consecutive failure waits a random duration in [d/2, d], d = initial x 2^(n-1)
// capped at max (0.5 s .. 10 s by default), so agents that lost the same server do not return
// in lock-step. Reset() after a success. Not thread-safe: one per retrying thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace carve::agent::node {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max, uint64_t seed);

  // The wait before the next attempt; grows with each call until Reset().
  std::chrono::milliseconds Next();
  void Reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  const std::chrono::milliseconds initial_;
  const std::chrono::milliseconds max_;
  std::mt19937_64 rng_;
  int failures_ = 0;
};

}  // namespace carve::agent::node
