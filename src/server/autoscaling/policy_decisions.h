// What one policy decides on one tick, as pure functions of its spec, its metric and the
// target: no store, no clock, no JSON. The engine (scaling_engine.cc) gathers the inputs,
// combines the policies' verdicts (any scale-out wins; scale-in only when every target-tracking
// policy wants it) and applies the result.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "server/autoscaling/datapoints.h"
#include "server/autoscaling/policy_spec.h"
#include "server/autoscaling/scaling_records.h"

namespace carve::server::autoscaling {

// How long a metric must breach before a policy acts (AutoScalingOptions).
struct EvaluationWindows {
  std::chrono::milliseconds scale_out{std::chrono::minutes(3)};
  std::chrono::milliseconds high_resolution_scale_out{std::chrono::seconds(30)};
  std::chrono::milliseconds scale_in{std::chrono::minutes(15)};
  std::chrono::milliseconds sample_interval{10'000};
};

// A policy's own clock: now, and when it last scaled each way (for the cooldowns).
struct PolicyTimes {
  int64_t now_ms = 0;
  int64_t last_scale_out_ms = 0;
  int64_t last_scale_in_ms = 0;
};

// At most one of the two is set: the capacity the policy scales out or in to.
struct TrackingVerdict {
  std::optional<int> scale_out;
  std::optional<int> scale_in;
};

// Target tracking, as AWS's two alarms judge it. It scales out when every datapoint of the
// scale-out window (3 of them; the high-resolution window for the high-resolution metric) is
// above the target, to ceil(desired * mean / target) within the target's bounds, unless scale-out
// is suspended or ScaleOutCooldown has not passed since it last scaled out. A metric above its
// target never scales in. It scales in when every datapoint of the scale-in window (15) is below
// 90% of the target, to the same formula, unless DisableScaleIn, scale-in is suspended, or
// either cooldown has not passed (a scale-out's cooldown holds scale-in too).
TrackingVerdict JudgeTargetTracking(const TargetTrackingSpec& spec, const MetricSeries& series,
                                    const ScalableTarget& target, int desired,
                                    const PolicyTimes& times, const EvaluationWindows& windows);

// Step scaling on NoCapacityInvocationFailures: `failures` invocations found no copy in the last
// sample interval. The first step whose bounds hold the count applies, by its adjustment type;
// the result is held to the target's bounds. A capacity only when it is above `desired`, the
// count is positive, scale-out is not suspended and Cooldown has passed since it last scaled.
std::optional<int> JudgeStepScaling(const StepScalingSpec& spec, double failures,
                                    const ScalableTarget& target, int desired,
                                    const PolicyTimes& times);

}  // namespace carve::server::autoscaling
