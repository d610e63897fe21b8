#include "server/autoscaling/policy_spec.h"

#include <fmt/format.h>

#include <utility>

#include "server/autoscaling/scaling_records.h"

namespace carve::server::autoscaling {

using nlohmann::json;

const std::vector<PredefinedMetric> kPredefinedMetrics = {
    {"SageMakerInferenceComponentInvocationsPerCopy", kCopyCount,
     TrackedMetric::kInvocationsPerCopy},
    {"SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution", kCopyCount,
     TrackedMetric::kConcurrentRequestsPerCopyHighResolution},
    {"SageMakerVariantInvocationsPerInstance", kInstanceCount,
     TrackedMetric::kInvocationsPerInstance},
};

namespace {

constexpr std::pair<std::string_view, Statistic> kStatistics[] = {
    {"Average", Statistic::kAverage}, {"Minimum", Statistic::kMinimum},
    {"Maximum", Statistic::kMaximum}, {"SampleCount", Statistic::kSampleCount},
    {"Sum", Statistic::kSum},
};
constexpr std::pair<std::string_view, AdjustmentType> kAdjustmentTypes[] = {
    {"ChangeInCapacity", AdjustmentType::kChangeInCapacity},
    {"PercentChangeInCapacity", AdjustmentType::kPercentChangeInCapacity},
    {"ExactCapacity", AdjustmentType::kExactCapacity},
};
constexpr int kDefaultCooldownS = 300;

template <typename T, size_t N>
Result<T> Named(const std::pair<std::string_view, T> (&table)[N], std::string_view member,
                const std::string& value) {
  for (const auto& [name, v] : table) {
    if (name == value) return v;
  }
  return InvalidArgument(fmt::format("{} '{}' is not one carve knows", member, value));
}

std::chrono::seconds Cooldown(const json& config, const char* member) {
  const auto it = config.find(member);
  return std::chrono::seconds(it != config.end() && it->is_number_integer() ? it->get<int>()
                                                                            : kDefaultCooldownS);
}

Result<TargetTrackingSpec> ParseTracking(const json& c) {
  TargetTrackingSpec s;
  s.target_value = c.at("TargetValue").get<double>();
  s.scale_out_cooldown = Cooldown(c, "ScaleOutCooldown");
  s.scale_in_cooldown = Cooldown(c, "ScaleInCooldown");
  s.disable_scale_in = c.value("DisableScaleIn", false);
  if (const auto cm = c.find("CustomizedMetricSpecification"); cm != c.end()) {
    s.metric = TrackedMetric::kCustomized;
    s.customized.name = cm->at("MetricName").get<std::string>();
    CARVE_ASSIGN_OR_RETURN(s.customized.statistic,
                           Named(kStatistics, "Statistic", cm->value("Statistic", "Average")));
    s.customized.dimensions = MetricDimensions(*cm);
    return s;
  }
  const std::string type =
      c.at("PredefinedMetricSpecification").at("PredefinedMetricType").get<std::string>();
  for (const PredefinedMetric& m : kPredefinedMetrics) {
    if (m.name == type) {
      s.metric = m.metric;
      return s;
    }
  }
  return InvalidArgument("PredefinedMetricType '" + type + "' is not one carve computes");
}

Result<StepScalingSpec> ParseStep(const json& c) {
  StepScalingSpec s;
  CARVE_ASSIGN_OR_RETURN(s.adjustment_type, Named(kAdjustmentTypes, "AdjustmentType",
                                                  c.value("AdjustmentType", "ChangeInCapacity")));
  s.min_adjustment_magnitude = c.value("MinAdjustmentMagnitude", 0);
  s.cooldown = Cooldown(c, "Cooldown");
  for (const json& step : c.at("StepAdjustments")) {
    s.steps.push_back({step.value("MetricIntervalLowerBound", -HUGE_VAL),
                       step.value("MetricIntervalUpperBound", HUGE_VAL),
                       step.at("ScalingAdjustment").get<int>()});
  }
  return s;
}

}  // namespace

Result<PolicySpec> ParsePolicySpec(std::string_view policy_type, const json& config) {
  try {
    if (policy_type == "TargetTrackingScaling") {
      CARVE_ASSIGN_OR_RETURN(TargetTrackingSpec s, ParseTracking(config));
      return PolicySpec(std::move(s));
    }
    if (policy_type == "StepScaling") {
      CARVE_ASSIGN_OR_RETURN(StepScalingSpec s, ParseStep(config));
      return PolicySpec(std::move(s));
    }
    return InvalidArgument(fmt::format("PolicyType '{}' is not one carve runs", policy_type));
  } catch (const json::exception& e) {
    return InvalidArgument(fmt::format("{} configuration: {}", policy_type, e.what()));
  }
}

std::map<std::string, std::string> MetricDimensions(const json& customized) {
  std::map<std::string, std::string> out;
  const auto dims = customized.is_object() ? customized.find("Dimensions") : customized.end();
  if (dims == customized.end() || !dims->is_array()) return out;
  for (const auto& d : *dims) {
    const auto name = d.is_object() ? d.find("Name") : d.end();
    const auto value = d.is_object() ? d.find("Value") : d.end();
    if (name == d.end() || value == d.end() || !name->is_string() || !value->is_string()) {
      continue;
    }
    out[name->get<std::string>()] = value->get<std::string>();
  }
  return out;
}

Result<std::map<std::string, std::string>> CustomMetricMatch(
    std::map<std::string, std::string> dimensions, const std::string& account) {
  if (auto it = dimensions.find("account"); it != dimensions.end() && it->second != account) {
    return InvalidArgument(
        fmt::format("Dimension account must be the policy's own account, {}: a policy reads "
                    "only its own account's series",
                    account));
  }
  dimensions["account"] = account;
  return dimensions;
}

}  // namespace carve::server::autoscaling
