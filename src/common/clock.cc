#include "common/clock.h"

namespace carve {

std::chrono::steady_clock::time_point SystemClock::Now() const {
  return std::chrono::steady_clock::now();
}

int64_t SystemClock::UnixMillis() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const SystemClock& SystemClock::Get() {
  static const SystemClock clock;
  return clock;
}

}  // namespace carve
