// The scaling-policy operations: validation as the service words it, then the policy parsed
// once into its typed spec (policy_spec.h).
#include <fmt/format.h>

#include <algorithm>

#include "common/bounded_json.h"
#include "server/autoscaling/ops.h"

namespace carve::server::autoscaling {

namespace {

// PolicyType's enum as AWS states it (the value set its message lists), and what carve runs.
constexpr std::string_view kPolicyTypes[] = {"PredictiveScaling", "StepScaling",
                                             "TargetTrackingScaling"};
constexpr std::string_view kAdjustmentTypes[] = {"ChangeInCapacity", "PercentChangeInCapacity",
                                                 "ExactCapacity"};
constexpr std::string_view kAggregations[] = {"Average", "Minimum", "Maximum"};
constexpr UnsupportedMember kUnsupportedPolicy[] = {
    {"PredictiveScalingPolicyConfiguration", "predictive scaling is not implemented"},
};
constexpr UnsupportedMember kUnsupportedCustom[] = {
    {"Metrics", "metric math is not implemented; name one series with MetricName"},
};
constexpr std::string_view kCustomNamespaces[] = {"carve"};
constexpr std::string_view kStatistics[] = {"Average", "Minimum", "Maximum", "SampleCount", "Sum"};
constexpr UnsupportedMember kUnsupportedPredefined[] = {
    {"ResourceLabel", "it applies to load-balancer metrics only"},
};

void ValidateCustom(Validator& v, const json& cm, const std::string& p,
                    const http::MetricsRegistry* metrics, const std::string& account) {
  v.Unsupported(cm, kUnsupportedCustom, p);
  v.String(cm, "Namespace", p, EnumRule(kCustomNamespaces), true);
  auto name = v.String(cm, "MetricName", p, LengthRule(1, 255), true);
  v.String(cm, "Statistic", p, EnumRule(kStatistics), true);
  v.String(cm, "Unit", p, LengthRule(1, 64), false);
  if (const json* dims = v.List(cm, "Dimensions", p, 0, 30, false)) {
    for (size_t i = 0; i < dims->size(); ++i) {
      const std::string dp = aws::ElementPath(MemberPath(p, "Dimensions"), i);
      v.String((*dims)[i], "Name", dp, LengthRule(1, 255), true);
      v.String((*dims)[i], "Value", dp, LengthRule(0, 1024), true);
    }
  }
  if (!name) return;
  if (metrics == nullptr) {
    v.Fail(MemberPath(p, "MetricName"), *name, "this server reads no customized metrics");
    return;
  }
  auto match = CustomMetricMatch(MetricDimensions(cm), account);
  if (!match.has_value()) {
    v.Fail(MemberPath(p, "Dimensions"), "[...]", match.error().message);
    return;
  }
  // Without the collectors: the autoscaling one takes this service's lock, held here.
  if (auto read = metrics->Read(*name, *match, /*collect=*/false); !read.has_value()) {
    v.Fail(MemberPath(p, "MetricName"), *name,
           read.error().message +
               "; name a gauge or counter of GET /metrics with an account label (a policy reads "
               "its own account's series), Dimensions its other labels");
  }
}

void ValidateTracking(Validator& v, const json& c, const ScalableKey& key,
                      const http::MetricsRegistry* metrics, const std::string& account) {
  const std::string p = "targetTrackingScalingPolicyConfiguration";
  v.Number(c, "TargetValue", p, {8.515920e-109, 1.174271e+108}, true);
  v.Integer(c, "ScaleOutCooldown", p, {0, 86400}, false);
  v.Integer(c, "ScaleInCooldown", p, {0, 86400}, false);
  v.Bool(c, "DisableScaleIn", p, false);
  const json* cm = v.Object(c, "CustomizedMetricSpecification", p, false);
  if (cm != nullptr) {
    if (c.contains("PredefinedMetricSpecification")) {
      v.Fail(MemberPath(p, "CustomizedMetricSpecification"), "{...}",
             "give PredefinedMetricSpecification or CustomizedMetricSpecification, not both");
    }
    ValidateCustom(v, *cm, MemberPath(p, "CustomizedMetricSpecification"), metrics, account);
    return;
  }
  const json* pm = v.Object(c, "PredefinedMetricSpecification", p, true);
  if (pm == nullptr) return;
  const std::string pp = MemberPath(p, "PredefinedMetricSpecification");
  v.Unsupported(*pm, kUnsupportedPredefined, pp);
  auto type = v.String(*pm, "PredefinedMetricType", pp, LengthRule(1, 256), true);
  if (!type) return;
  for (const PredefinedMetric& m : kPredefinedMetrics) {
    if (m.name != *type) continue;
    if (m.dimension != key.dimension) {
      v.Fail(MemberPath(pp, "PredefinedMetricType"), *type,
             fmt::format("{} applies to scalable dimension {}, not {}", m.name, m.dimension,
                         key.dimension));
    }
    return;
  }
  std::string names;
  for (const PredefinedMetric& m : kPredefinedMetrics)
    names += (names.empty() ? "" : ", ") + std::string(m.name);
  v.Fail(MemberPath(pp, "PredefinedMetricType"), *type,
         "carve computes these predefined metrics: [" + names + "]");
}

void ValidateStep(Validator& v, const json& c, const ScalableKey& key) {
  const std::string p = "stepScalingPolicyConfiguration";
  if (!key.IsComponent()) {
    v.Fail(p, "{...}",
           "carve triggers step scaling on an inference component's NoCapacityInvocationFailures "
           "only; use target tracking for " +
               std::string(kInstanceCount));
  }
  v.String(c, "AdjustmentType", p, EnumRule(kAdjustmentTypes), true);
  v.Integer(c, "MinAdjustmentMagnitude", p, {0, {}}, false);
  v.Integer(c, "Cooldown", p, {0, 86400}, false);
  v.String(c, "MetricAggregationType", p, EnumRule(kAggregations), false);
  const json* steps = v.List(c, "StepAdjustments", p, 1, 20, true);
  if (steps == nullptr) return;
  for (size_t i = 0; i < steps->size(); ++i) {
    const std::string sp = aws::ElementPath(MemberPath(p, "StepAdjustments"), i);
    const json& s = (*steps)[i];
    if (!s.is_object()) {
      v.Fail(sp, JsonPreview(s, aws::kMaxShownValueBytes), "Member must be a structure");
      continue;
    }
    v.Number(s, "MetricIntervalLowerBound", sp, {}, false);
    v.Number(s, "MetricIntervalUpperBound", sp, {}, false);
    v.Integer(s, "ScalingAdjustment", sp, {}, true);
  }
}

}  // namespace

Result<json> PutScalingPolicy(const OpContext& ctx, const std::string& account, const json& in) {
  Validator v;
  auto name = v.String(in, "PolicyName", "", kNameRule, true);
  auto key = KeyOf(v, in);
  auto type = v.String(in, "PolicyType", "", EnumRule(kPolicyTypes), false);
  v.Unsupported(in, kUnsupportedPolicy, "");
  const std::string policy_type = type.value_or("StepScaling");  // The service's default.
  if (policy_type == "PredictiveScaling") {
    v.Fail("policyType", policy_type,
           "carve implements the policy types StepScaling and TargetTrackingScaling, not "
           "PredictiveScaling");
  }
  const json* tracking = v.Object(in, "TargetTrackingScalingPolicyConfiguration", "", false);
  const json* step = v.Object(in, "StepScalingPolicyConfiguration", "", false);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_RETURN_IF_ERROR(ValidateKey(*key));
  const json* config = policy_type == "StepScaling" ? step : tracking;
  if (config == nullptr) {
    return InvalidArgument(fmt::format(
        "{}PolicyConfiguration is required for policy type {}",
        policy_type == "StepScaling" ? "StepScaling" : "TargetTrackingScaling", policy_type));
  }
  if ((policy_type == "StepScaling" && tracking != nullptr) ||
      (policy_type != "StepScaling" && step != nullptr)) {
    return InvalidArgument("Give the configuration of policy type " + policy_type + " only");
  }
  if (policy_type == "StepScaling") {
    ValidateStep(v, *config, *key);
  } else {
    ValidateTracking(v, *config, *key, ctx.metrics, account);
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_RETURN_IF_ERROR(GetTarget(ctx, account, *key));

  const store::Key rkey{account, std::string(kPolicyKind), key->Name() + " " + *name};
  ScalingPolicy p;
  std::optional<int64_t> version;
  if (auto existing = ctx.store.Get(rkey); existing.has_value()) {
    CARVE_ASSIGN_OR_RETURN(p, ScalingPolicy::FromJson(json::parse(existing->body)));
    version = existing->version;
  } else {
    store::ListOptions lo;
    lo.name_prefix = key->Name() + " ";
    CARVE_ASSIGN_OR_RETURN(auto others, ctx.store.List(account, std::string(kPolicyKind), lo));
    if (others.size() >= 50) {
      return ResourceExhausted("A scalable target holds at most 50 scaling policies");
    }
    p.key = *key;
    p.name = *name;
    p.created_ms = ctx.clock.UnixMillis();
    p.arn = fmt::format(
        "arn:aws:autoscaling:{}:{}:scalingPolicy:{}:resource/sagemaker/{}:"
        "policyName/{}",
        ctx.region, account, RandomId(32), key->resource_id, *name);
  }
  p.type = policy_type;
  p.config = *config;
  CARVE_ASSIGN_OR_RETURN(p.spec, ParsePolicySpec(policy_type, *config));
  CARVE_RETURN_IF_ERROR(Write(ctx.store, rkey, p.ToJson().dump(), version));
  // carve creates no CloudWatch alarms: its own evaluation stands in for them.
  return json{{"PolicyARN", p.arn}, {"Alarms", json::array()}};
}

Result<json> DescribeScalingPolicies(const OpContext& ctx, const std::string& account,
                                     const json& in) {
  Validator v;
  const Filters f = FiltersOf(v, in, "PolicyNames");
  auto page = PageOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  return ListPage<ScalingPolicy>(ctx.store, account, kPolicyKind, *page, "ScalingPolicies",
                                 [&](const ScalingPolicy& p) { return f.Keep(p.key, p.name); });
}

Result<json> DeleteScalingPolicy(const OpContext& ctx, const std::string& account, const json& in) {
  Validator v;
  auto name = v.String(in, "PolicyName", "", kNameRule, true);
  auto key = KeyOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  return RemoveNamed(ctx.store, account, kPolicyKind, *key, *name,
                     fmt::format("No scaling policy found for service namespace: {}, resource ID: "
                                 "{}, scalable dimension: {}, policy name: {}",
                                 kNamespace, key->resource_id, key->dimension, *name));
}

}  // namespace carve::server::autoscaling
