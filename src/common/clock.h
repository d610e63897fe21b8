// Injected time: production code reads a Clock, tests use FakeClock and jump instead of sleeping.
#pragma once

#include <chrono>
#include <cstdint>

namespace carve {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time for timeouts and intervals.
  virtual std::chrono::steady_clock::time_point Now() const = 0;
  // Wall-clock milliseconds since the Unix epoch, for timestamps that reach users.
  virtual int64_t UnixMillis() const = 0;
};

class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override;
  int64_t UnixMillis() const override;
  // A process-wide instance; thread-safe.
  static const SystemClock& Get();
};

}  // namespace carve
