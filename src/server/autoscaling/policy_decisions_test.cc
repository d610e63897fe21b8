#include "server/autoscaling/policy_decisions.h"

#include <gtest/gtest.h>

namespace carve::server::autoscaling {
namespace {

using std::chrono::seconds;

// Samples every 10 s; 3 datapoints of 10 s to scale out (30 s), 6 of 10 s to scale in (60 s).
const EvaluationWindows kWindows{seconds(30), seconds(20), seconds(60), seconds(10)};

// A level (requests in flight) held at `value` per copy with `copies` copies, sampled every
// 10 s from 0 to 120 s.
MetricSeries Level(double value, int copies) {
  MetricSeries s;
  for (int t = 0; t <= 120; t += 10) s.points.push_back({t * 1000, value * copies, copies});
  return s;
}

ScalableTarget Bounds(int min, int max) {
  ScalableTarget t;
  t.min = min;
  t.max = max;
  return t;
}

TargetTrackingSpec Tracking(double target, TrackedMetric metric = TrackedMetric::kCustomized) {
  TargetTrackingSpec s;
  s.target_value = target;
  s.metric = metric;
  s.scale_out_cooldown = seconds(60);
  s.scale_in_cooldown = seconds(100);
  return s;
}

const PolicyTimes kLongAgo{120'000, 0, 0};

TEST(JudgeTargetTracking, ScalesOutInProportionToTheMeanWithinTheBounds) {
  // 2 copies at 15 per copy against a target of 10: ceil(2 * 15 / 10) = 3.
  MetricSeries s = Level(15, 2);
  for (auto& p : s.points) p.capacity = -1;  // A customized metric: not divided.
  for (auto& p : s.points) p.value = 15;
  EXPECT_EQ(JudgeTargetTracking(Tracking(10), s, Bounds(1, 10), 2, kLongAgo, kWindows).scale_out,
            3);
  EXPECT_EQ(JudgeTargetTracking(Tracking(10), s, Bounds(1, 2), 2, kLongAgo, kWindows).scale_out,
            std::nullopt);
}

TEST(JudgeTargetTracking, EveryDatapointMustBreachNotTheirMean) {
  MetricSeries s;
  for (int t = 0; t <= 120; t += 10) s.points.push_back({t * 1000, t == 100 ? 5.0 : 30.0, -1});
  // The mean of the last 30 s is above 10, but the datapoint at 100 s is not.
  const TrackingVerdict v =
      JudgeTargetTracking(Tracking(10), s, Bounds(1, 10), 2, kLongAgo, kWindows);
  EXPECT_EQ(v.scale_out, std::nullopt);
  EXPECT_EQ(v.scale_in, std::nullopt);
}

TEST(JudgeTargetTracking, TheScaleOutCooldownCountsFromTheLastScaleOut) {
  MetricSeries s = Level(30, 1);
  const TargetTrackingSpec spec =
      Tracking(10, TrackedMetric::kConcurrentRequestsPerCopyHighResolution);
  // ScaleOutCooldown 60 s: held at 59.999 s after the last scale-out, free at 60 s.
  EXPECT_FALSE(JudgeTargetTracking(spec, s, Bounds(1, 10), 1, {120'000, 60'001, 0}, kWindows)
                   .scale_out.has_value());
  EXPECT_EQ(
      JudgeTargetTracking(spec, s, Bounds(1, 10), 1, {120'000, 60'000, 0}, kWindows).scale_out, 3);
  // The scale-in cooldown does not hold scale-out.
  EXPECT_EQ(
      JudgeTargetTracking(spec, s, Bounds(1, 10), 1, {120'000, 0, 119'000}, kWindows).scale_out, 3);
}

TEST(JudgeTargetTracking, TheHighResolutionMetricScalesOutOnItsOwnWindow) {
  // Above the target only for the last 20 s: the high-resolution window (20 s) sees it, the
  // standard one (30 s) does not.
  MetricSeries s;
  for (int t = 0; t <= 120; t += 10) s.points.push_back({t * 1000, t > 100 ? 30.0 : 1.0, 1});
  EXPECT_EQ(
      JudgeTargetTracking(Tracking(10, TrackedMetric::kConcurrentRequestsPerCopyHighResolution), s,
                          Bounds(1, 10), 1, kLongAgo, kWindows)
          .scale_out,
      3);
  EXPECT_EQ(JudgeTargetTracking(Tracking(10, TrackedMetric::kCustomized), s, Bounds(1, 10), 1,
                                kLongAgo, kWindows)
                .scale_out,
            std::nullopt);
}

TEST(JudgeTargetTracking, ScalesInBelowNinetyPercentWhenBothCooldownsHavePassed) {
  const MetricSeries s = Level(2, 4);  // 2 per copy, 4 copies, target 10: ceil(4 * 2 / 10) = 1.
  const TargetTrackingSpec spec =
      Tracking(10, TrackedMetric::kConcurrentRequestsPerCopyHighResolution);
  EXPECT_EQ(JudgeTargetTracking(spec, s, Bounds(1, 10), 4, kLongAgo, kWindows).scale_in, 1);
  // ScaleInCooldown 100 s since the last scale-in; ScaleOutCooldown 60 s since the last scale-out.
  EXPECT_FALSE(JudgeTargetTracking(spec, s, Bounds(1, 10), 4, {120'000, 0, 20'001}, kWindows)
                   .scale_in.has_value());
  EXPECT_EQ(JudgeTargetTracking(spec, s, Bounds(1, 10), 4, {120'000, 0, 20'000}, kWindows).scale_in,
            1);
  EXPECT_FALSE(JudgeTargetTracking(spec, s, Bounds(1, 10), 4, {120'000, 60'001, 0}, kWindows)
                   .scale_in.has_value());
  // Between 90% and 100% of the target, nothing.
  EXPECT_FALSE(JudgeTargetTracking(spec, Level(9.5, 4), Bounds(1, 10), 4, kLongAgo, kWindows)
                   .scale_in.has_value());
}

TEST(JudgeTargetTracking, DisableScaleInAndASuspendedTargetHoldScaleIn) {
  const MetricSeries s = Level(2, 4);
  TargetTrackingSpec spec = Tracking(10, TrackedMetric::kConcurrentRequestsPerCopyHighResolution);
  spec.disable_scale_in = true;
  EXPECT_FALSE(JudgeTargetTracking(spec, s, Bounds(1, 10), 4, kLongAgo, kWindows).scale_in);
  spec.disable_scale_in = false;
  ScalableTarget suspended = Bounds(1, 10);
  suspended.scale_in_suspended = true;
  EXPECT_FALSE(JudgeTargetTracking(spec, s, suspended, 4, kLongAgo, kWindows).scale_in);
  suspended.scale_in_suspended = false;
  suspended.scale_out_suspended = true;  // Holds scale-out only.
  EXPECT_EQ(JudgeTargetTracking(spec, s, suspended, 4, kLongAgo, kWindows).scale_in, 1);
  EXPECT_FALSE(JudgeTargetTracking(spec, Level(30, 1), suspended, 1, kLongAgo, kWindows).scale_out);
}

StepScalingSpec Steps(AdjustmentType type) {
  StepScalingSpec s;
  s.adjustment_type = type;
  s.cooldown = seconds(30);
  s.steps = {{0, 5, 1}, {5, HUGE_VAL, 4}};
  return s;
}

TEST(JudgeStepScaling, TheStepHoldingTheFailureCountApplies) {
  const StepScalingSpec s = Steps(AdjustmentType::kChangeInCapacity);
  EXPECT_EQ(JudgeStepScaling(s, 1, Bounds(0, 10), 0, kLongAgo), 1);
  EXPECT_EQ(JudgeStepScaling(s, 4.5, Bounds(0, 10), 0, kLongAgo), 1);
  EXPECT_EQ(JudgeStepScaling(s, 5, Bounds(0, 10), 0, kLongAgo), 4);  // Upper bounds exclusive.
  EXPECT_EQ(JudgeStepScaling(s, 0, Bounds(0, 10), 0, kLongAgo), std::nullopt);
  EXPECT_EQ(JudgeStepScaling(s, 7, Bounds(0, 3), 2, kLongAgo), 3);  // Held to the maximum.
  EXPECT_EQ(JudgeStepScaling(s, 7, Bounds(0, 3), 3, kLongAgo), std::nullopt);
}

TEST(JudgeStepScaling, EachAdjustmentTypeAsTheServiceComputesIt) {
  EXPECT_EQ(JudgeStepScaling(Steps(AdjustmentType::kExactCapacity), 7, Bounds(0, 10), 2, kLongAgo),
            4);
  StepScalingSpec pct = Steps(AdjustmentType::kPercentChangeInCapacity);
  pct.steps = {{0, HUGE_VAL, 50}};
  EXPECT_EQ(JudgeStepScaling(pct, 1, Bounds(0, 20), 6, kLongAgo), 9);             // 6 + trunc(3).
  EXPECT_EQ(JudgeStepScaling(pct, 1, Bounds(0, 20), 1, kLongAgo), std::nullopt);  // trunc(0.5).
  pct.min_adjustment_magnitude = 2;
  EXPECT_EQ(JudgeStepScaling(pct, 1, Bounds(0, 20), 1, kLongAgo), 3);
}

TEST(JudgeStepScaling, CooldownAndSuspensionHoldIt) {
  const StepScalingSpec s = Steps(AdjustmentType::kChangeInCapacity);
  EXPECT_EQ(JudgeStepScaling(s, 1, Bounds(0, 10), 0, {120'000, 90'001, 0}), std::nullopt);
  EXPECT_EQ(JudgeStepScaling(s, 1, Bounds(0, 10), 0, {120'000, 90'000, 0}), 1);
  ScalableTarget suspended = Bounds(0, 10);
  suspended.scale_out_suspended = true;
  EXPECT_EQ(JudgeStepScaling(s, 1, suspended, 0, kLongAgo), std::nullopt);
}

}  // namespace
}  // namespace carve::server::autoscaling
