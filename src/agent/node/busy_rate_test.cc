#include "agent/node/busy_rate.h"

#include <gtest/gtest.h>

namespace carve::agent::node {
namespace {

using namespace std::chrono_literals;
using Time = std::chrono::steady_clock::time_point;

TEST(BusyRate, IsUnknownUntilTwoSamplesApart) {
  BusyRate r(1s);
  EXPECT_EQ(r.Sample(5'000'000, Time(10s)), -1);
  EXPECT_EQ(r.Sample(9'000'000, Time(10s) + 500ms), -1) << "too soon after the first";
}

TEST(BusyRate, IsTheBusyTimeAddedOverTheWallTime) {
  BusyRate r(1s);
  r.Sample(0, Time(10s));
  EXPECT_DOUBLE_EQ(r.Sample(300'000'000, Time(11s)), 30.0);  // 300 ms busy in 1 s.
  EXPECT_DOUBLE_EQ(r.Sample(300'000'000, Time(11s) + 200ms), 30.0) << "too soon: last rate";
  EXPECT_DOUBLE_EQ(r.Sample(500'000'000, Time(13s)), 10.0);  // 200 ms more in 2 s.
}

TEST(BusyRate, ClampsToTheCard) {
  BusyRate r(1s);
  r.Sample(1'000'000'000, Time(10s));
  EXPECT_DOUBLE_EQ(r.Sample(2'200'000'000, Time(11s)), 100.0);
  EXPECT_DOUBLE_EQ(r.Sample(2'100'000'000, Time(12s)), 0.0) << "a settled overestimate";
}

}  // namespace
}  // namespace carve::agent::node
