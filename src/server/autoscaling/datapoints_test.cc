#include "server/autoscaling/datapoints.h"

#include <gtest/gtest.h>

namespace carve::server::autoscaling {
namespace {

using std::chrono::seconds;

// datapoints.h's worked example: a count sampled every 10 s, 2 copies throughout.
MetricSeries Example(bool rate) {
  MetricSeries s;
  s.rate = rate;
  const double counts[] = {0, 20, 60, 60, 120, 180, 180};
  for (int i = 0; i < 7; ++i) s.points.push_back({i * 10'000, counts[i], 2});
  return s;
}

TEST(Datapoints, TheHeadersWorkedExampleAsARate) {
  auto d = Datapoints(Example(true), 60'000, seconds(60), 3, seconds(10));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, (std::vector<double>{90, 90, 90}));
}

TEST(Datapoints, TheHeadersWorkedExampleAsALevel) {
  auto d = Datapoints(Example(false), 60'000, seconds(60), 3, seconds(10));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, (std::vector<double>{20, 45, 90}));
}

TEST(Datapoints, NoneUntilTheSamplesReachBackToTheWindowsStart) {
  // At 70 s the window (10, 70] needs a sample at or before 10 s: there is one. At 70 s with a
  // 80 s window, (-10, 70] reaches before the first sample: a restart causes no scaling.
  EXPECT_TRUE(Datapoints(Example(true), 70'000, seconds(60), 3, seconds(10)).has_value());
  EXPECT_FALSE(Datapoints(Example(true), 70'000, seconds(80), 3, seconds(10)).has_value());
}

TEST(Datapoints, ACapacityOfZeroLeavesTheMetricUndefined) {
  MetricSeries s = Example(true);
  s.points[6].capacity = 0;  // The last period's end.
  EXPECT_FALSE(Datapoints(s, 60'000, seconds(60), 3, seconds(10)).has_value());
  MetricSeries level = Example(false);
  level.points[3].capacity = 0;  // Inside the second period.
  EXPECT_FALSE(Datapoints(level, 60'000, seconds(60), 3, seconds(10)).has_value());
}

TEST(Datapoints, AMissingValueLeavesItsPeriodUndefined) {
  MetricSeries s = Example(false);
  s.points[5].value.reset();
  EXPECT_FALSE(Datapoints(s, 60'000, seconds(60), 3, seconds(10)).has_value());
}

TEST(Datapoints, AMetricUsedAsItIsIsNotDivided) {
  MetricSeries s = Example(false);
  for (auto& p : s.points) p.capacity = -1;
  EXPECT_EQ(*Datapoints(s, 60'000, seconds(60), 3, seconds(10)),
            (std::vector<double>{40, 90, 180}));
}

TEST(Datapoints, ADatapointIsNeverShorterThanASample) {
  // 3 datapoints asked of a 20 s window sampled every 10 s: 2, of 10 s each.
  auto d = Datapoints(Example(true), 60'000, seconds(20), 3, seconds(10));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, (std::vector<double>{180, 0}));
}

TEST(Datapoints, ALevelSampledMoreSparselyThanItsDatapointsReadsTheLevelAtEachEnd) {
  MetricSeries s;
  s.points = {{0, 4.0, 1}, {60'000, 10.0, 2}};
  // 3 periods of 20 s with samples 60 s apart: the first two hold no sample and read the level
  // at their end (the sample at 0 s), the third the sample inside it.
  auto d = Datapoints(s, 60'000, seconds(60), 3, seconds(20));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, (std::vector<double>{4, 4, 5}));
}

TEST(Datapoints, ACountThatFallsIsReadAsNoInvocations) {
  MetricSeries s;
  s.rate = true;
  s.points = {{0, 100.0, 1}, {30'000, 40.0, 1}, {60'000, 40.0, 1}};  // The router restarted.
  EXPECT_EQ(*Datapoints(s, 60'000, seconds(60), 2, seconds(30)), (std::vector<double>{0, 0}));
}

}  // namespace
}  // namespace carve::server::autoscaling
