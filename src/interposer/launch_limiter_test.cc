#include "interposer/launch_limiter.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace carve::interposer {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

LedgerSettings Share(uint32_t percent, bool burstable = false, uint32_t window_ms = 100) {
  return LedgerSettings{"w", 1, percent, burstable, window_ms};
}

TEST(LaunchLimiter, IsOffAtAFullCardAndWhenBurstable) {
  SharedBucket bucket{};
  FakeClock clock;
  EXPECT_FALSE(LaunchLimiter(bucket, Share(100), clock).enabled());
  EXPECT_FALSE(LaunchLimiter(bucket, Share(30, true), clock).enabled());
  EXPECT_TRUE(LaunchLimiter(bucket, Share(30), clock).enabled());
  EXPECT_EQ(LaunchLimiter(bucket, Share(100), clock).Admit(), nanoseconds{0});
}

TEST(LaunchLimiter, AnEmptyBucketMakesALaunchWaitForItsRefill) {
  SharedBucket bucket{};
  FakeClock clock;
  LaunchLimiter limiter(bucket, Share(30), clock);
  EXPECT_GT(limiter.Admit(), nanoseconds{0});
  clock.Advance(milliseconds(10));  // 3 ms of busy time at 30%
  EXPECT_EQ(limiter.Admit(), nanoseconds{0});
}

TEST(LaunchLimiter, TheWaitIsTheDeficitScaledByTheShare) {
  SharedBucket bucket{};
  FakeClock clock;
  LaunchLimiter limiter(bucket, Share(25), clock);
  bucket.tokens_ns = -2'000'000;  // 2 ms over: 8 ms of wall time at 25%
  EXPECT_EQ(limiter.Admit(), nanoseconds{8'000'001});
}

TEST(LaunchLimiter, IdleTimeBanksAtMostOneWindowOfShare) {
  SharedBucket bucket{};
  FakeClock clock;
  LaunchLimiter limiter(bucket, Share(30, false, 100), clock);
  (void)limiter.Admit();
  clock.Advance(milliseconds(10'000));
  EXPECT_EQ(limiter.Admit(), nanoseconds{0});
  EXPECT_EQ(bucket.tokens_ns.load(), 30'000'000);  // 30% of 100 ms, not of 10 s
}

TEST(LaunchLimiter, SettlingChargesTheMeasuredTimeNotTheEstimate) {
  SharedBucket bucket{};
  FakeClock clock;
  LaunchLimiter limiter(bucket, Share(50), clock);
  bucket.tokens_ns = 10'000'000;
  ASSERT_EQ(limiter.Admit(), nanoseconds{0});  // estimate 0 charged
  limiter.Settle(0, 4'000'000);
  EXPECT_EQ(bucket.tokens_ns.load(), 6'000'000);
  EXPECT_EQ(limiter.EstimateNs(), 4'000'000);
  EXPECT_EQ(bucket.busy_ns_total.load(), 4'000'000);
}

// A simulated device: every admitted launch is a 2 ms kernel that runs when the previous one
// ends. Over 10 s of simulated time the busy fraction must be the share.
double SimulatedBusyFraction(uint32_t percent, int64_t kernel_ns) {
  SharedBucket bucket{};
  FakeClock clock;
  LaunchLimiter limiter(bucket, Share(percent), clock);
  int64_t busy = 0;
  const auto end = clock.Now() + milliseconds(10'000);
  while (clock.Now() < end) {
    nanoseconds wait = limiter.Admit();
    if (wait.count() > 0) {
      clock.Advance(std::chrono::ceil<milliseconds>(wait));
      continue;
    }
    const int64_t estimate = limiter.EstimateNs();
    busy += kernel_ns;
    limiter.Settle(estimate, kernel_ns);
    clock.Advance(milliseconds(kernel_ns / 1'000'000));
  }
  return static_cast<double>(busy) / 10e9;
}

TEST(LaunchLimiter, HoldsBusyTimeToTheShareOverTime) {
  EXPECT_NEAR(SimulatedBusyFraction(30, 2'000'000), 0.30, 0.02);
  EXPECT_NEAR(SimulatedBusyFraction(70, 2'000'000), 0.70, 0.02);
  EXPECT_NEAR(SimulatedBusyFraction(10, 5'000'000), 0.10, 0.02);
}

}  // namespace
}  // namespace carve::interposer
