// A scaling policy's configuration, typed. PutScalingPolicy validates the JSON a caller sent
// (naming each bad member, as the service does) and parses it here once; the engine reads these
// fields and never a JSON member. The JSON is kept beside it only because the Describe
// operations echo it as it was given.
#pragma once

#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"

namespace carve::server::autoscaling {

// What a target-tracking policy tracks: one of the predefined metrics carve computes from the
// router's signals, or one of carve's own Prometheus series (a CustomizedMetricSpecification).
enum class TrackedMetric {
  kInvocationsPerCopy,                       // SageMakerInferenceComponentInvocationsPerCopy
  kConcurrentRequestsPerCopyHighResolution,  // ...ConcurrentRequestsPerCopyHighResolution
  kInvocationsPerInstance,                   // SageMakerVariantInvocationsPerInstance
  kCustomized,
};

// A predefined metric's wire name and the scalable dimension it applies to.
struct PredefinedMetric {
  std::string_view name;
  std::string_view dimension;
  TrackedMetric metric;
};
extern const std::vector<PredefinedMetric> kPredefinedMetrics;

enum class Statistic { kAverage, kMinimum, kMaximum, kSampleCount, kSum };

struct CustomizedMetric {
  std::string name;  // A family of GET /metrics.
  Statistic statistic = Statistic::kAverage;
  std::map<std::string, std::string> dimensions;  // Label matchers, as given.
};

struct TargetTrackingSpec {
  double target_value = 0;
  TrackedMetric metric = TrackedMetric::kInvocationsPerCopy;
  CustomizedMetric customized;  // When metric is kCustomized.
  std::chrono::seconds scale_out_cooldown{300};
  std::chrono::seconds scale_in_cooldown{300};
  bool disable_scale_in = false;
};

enum class AdjustmentType { kChangeInCapacity, kPercentChangeInCapacity, kExactCapacity };

// A step applies when lower <= metric < upper; an absent bound is infinite.
struct StepAdjustment {
  double lower = -HUGE_VAL;
  double upper = HUGE_VAL;
  int adjustment = 0;
};

struct StepScalingSpec {
  AdjustmentType adjustment_type = AdjustmentType::kChangeInCapacity;
  int min_adjustment_magnitude = 0;
  std::chrono::seconds cooldown{300};
  std::vector<StepAdjustment> steps;
};

using PolicySpec = std::variant<TargetTrackingSpec, StepScalingSpec>;

// Parses the configuration of `policy_type` ("TargetTrackingScaling" or "StepScaling"), as the
// Validator accepted it or as a record holds it. InvalidArgument names the member that is
// missing or of the wrong kind (only a record written by something else than carve has one).
Result<PolicySpec> ParsePolicySpec(std::string_view policy_type, const nlohmann::json& config);

// A CustomizedMetricSpecification's Dimensions as label matchers; members that are not a
// Name/Value pair of strings are skipped (the Validator names them).
std::map<std::string, std::string> MetricDimensions(const nlohmann::json& customized);

// The series a customized metric of a policy in `account` reads: its dimensions as label
// matchers, and the label "account" set to the policy's own account, so a policy reads only its
// account's series (two accounts may both have a component "ic") and never another's. A family
// without an account label is therefore refused (MetricsRegistry::Read). The error names a
// dimension that asks for another account.
Result<std::map<std::string, std::string>> CustomMetricMatch(
    std::map<std::string, std::string> dimensions, const std::string& account);

}  // namespace carve::server::autoscaling
