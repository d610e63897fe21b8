#include "server/autoscaling/policy_decisions.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace carve::server::autoscaling {

namespace {

constexpr double kScaleInFraction = 0.9;  // Scale in below 90% of the target, as AWS's alarms do.

bool Passed(int64_t now_ms, int64_t since_ms, std::chrono::seconds cooldown) {
  return now_ms >=
         since_ms + std::chrono::duration_cast<std::chrono::milliseconds>(cooldown).count();
}

// The capacity the mean of `points` asks for: capacity grows and shrinks with the metric.
int Proportional(const std::vector<double>& points, int desired, double target_value,
                 const ScalableTarget& target) {
  const double avg = std::accumulate(points.begin(), points.end(), 0.0) / points.size();
  return std::clamp(static_cast<int>(std::ceil(desired * avg / target_value)), target.min,
                    target.max);
}

}  // namespace

TrackingVerdict JudgeTargetTracking(const TargetTrackingSpec& spec, const MetricSeries& series,
                                    const ScalableTarget& target, int desired,
                                    const PolicyTimes& times, const EvaluationWindows& windows) {
  TrackingVerdict verdict;
  const std::chrono::milliseconds out_window =
      spec.metric == TrackedMetric::kConcurrentRequestsPerCopyHighResolution
          ? windows.high_resolution_scale_out
          : windows.scale_out;
  const double target_value = spec.target_value;
  if (auto high = Datapoints(series, times.now_ms, out_window, 3, windows.sample_interval);
      high && std::all_of(high->begin(), high->end(), [&](double v) { return v > target_value; })) {
    const int want = Proportional(*high, desired, target_value, target);
    if (want > desired && !target.scale_out_suspended &&
        Passed(times.now_ms, times.last_scale_out_ms, spec.scale_out_cooldown)) {
      verdict.scale_out = want;
    }
    return verdict;
  }
  if (auto low = Datapoints(series, times.now_ms, windows.scale_in, 15, windows.sample_interval);
      low && std::all_of(low->begin(), low->end(),
                         [&](double v) { return v < kScaleInFraction * target_value; })) {
    const int want = Proportional(*low, desired, target_value, target);
    if (want < desired && !spec.disable_scale_in && !target.scale_in_suspended &&
        Passed(times.now_ms, times.last_scale_in_ms, spec.scale_in_cooldown) &&
        Passed(times.now_ms, times.last_scale_out_ms, spec.scale_out_cooldown)) {
      verdict.scale_in = want;
    }
  }
  return verdict;
}

std::optional<int> JudgeStepScaling(const StepScalingSpec& spec, double failures,
                                    const ScalableTarget& target, int desired,
                                    const PolicyTimes& times) {
  if (failures <= 0 || target.scale_out_suspended) return std::nullopt;
  if (!Passed(times.now_ms, times.last_scale_out_ms, spec.cooldown)) return std::nullopt;
  const auto step = std::find_if(
      spec.steps.begin(), spec.steps.end(),
      [&](const StepAdjustment& s) { return failures >= s.lower && failures < s.upper; });
  if (step == spec.steps.end()) return std::nullopt;
  int want = desired;
  switch (spec.adjustment_type) {
    case AdjustmentType::kExactCapacity:
      want = step->adjustment;
      break;
    case AdjustmentType::kPercentChangeInCapacity: {
      int delta = static_cast<int>(std::trunc(desired * step->adjustment / 100.0));
      const int min_mag = spec.min_adjustment_magnitude;
      if (std::abs(delta) < min_mag) delta = step->adjustment < 0 ? -min_mag : min_mag;
      want = desired + delta;
      break;
    }
    case AdjustmentType::kChangeInCapacity:
      want = desired + step->adjustment;
      break;
  }
  want = std::clamp(want, target.min, target.max);
  if (want <= desired) return std::nullopt;
  return want;
}

}  // namespace carve::server::autoscaling
