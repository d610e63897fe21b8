// FakeClock: a Clock that only moves when a test advances it. Thread-safe.
#pragma once

#include <atomic>

#include "common/clock.h"

namespace carve {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t unix_millis = 1'700'000'000'000) : unix_millis_(unix_millis) {}

  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::time_point(std::chrono::milliseconds(elapsed_ms_.load()));
  }
  int64_t UnixMillis() const override { return unix_millis_ + elapsed_ms_.load(); }

  void Advance(std::chrono::milliseconds d) { elapsed_ms_ += d.count(); }

 private:
  const int64_t unix_millis_;
  std::atomic<int64_t> elapsed_ms_{0};
};

}  // namespace carve
