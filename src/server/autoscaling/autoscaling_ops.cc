// AutoScalingService's operations: validation as the service words it, the Store records, and
// the error codes of Application Auto Scaling.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <set>

#include "aws/validator.h"
#include "common/bounded_json.h"
#include "server/autoscaling/autoscaling_service.h"
#include "store/commit_in_steps.h"

namespace carve::server::autoscaling {

using aws::EnumRule;
using aws::LengthRule;
using aws::MemberPath;
using aws::StringRule;
using aws::UnsupportedMember;
using aws::Validator;
using nlohmann::json;

namespace {

constexpr std::string_view kNamespaces[] = {kNamespace};
constexpr std::string_view kDimensions[] = {kCopyCount, kInstanceCount};
// PolicyType's enum as AWS states it (the value set its message lists), and what carve runs.
constexpr std::string_view kPolicyTypes[] = {"PredictiveScaling", "StepScaling",
                                             "TargetTrackingScaling"};
constexpr std::string_view kAdjustmentTypes[] = {"ChangeInCapacity", "PercentChangeInCapacity",
                                                 "ExactCapacity"};
constexpr std::string_view kAggregations[] = {"Average", "Minimum", "Maximum"};
constexpr StringRule kIdRule = LengthRule(1, 1600);
constexpr StringRule kNameRule = LengthRule(1, 256);
constexpr int64_t kMaxCapacity = 1'000'000;

// The predefined metrics carve computes, and the dimension each applies to.
struct Metric {
  std::string_view name;
  std::string_view dimension;
};
constexpr Metric kMetrics[] = {
    {"SageMakerInferenceComponentInvocationsPerCopy", kCopyCount},
    {"SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution", kCopyCount},
    {"SageMakerVariantInvocationsPerInstance", kInstanceCount},
};

constexpr UnsupportedMember kUnsupportedRegister[] = {
    {"Tags", "tags on scalable targets are not implemented; omit them"},
};
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
constexpr UnsupportedMember kUnsupportedActivities[] = {
    {"IncludeNotScaledActivities",
     "carve records only activities that scaled; omit it or set it to false", false},
};

// A message may quote the caller's raw bytes (a body that is not JSON): never let them throw.
http::ApiResponse Error(int status, std::string_view type, const std::string& message) {
  return {status,
          json{{"__type", type}, {"message", message}}.dump(-1, ' ', false,
                                                            json::error_handler_t::replace),
          std::string(type)};
}

// carve's error codes as Application Auto Scaling's.
http::ApiResponse ToAasError(const carve::Error& e) {
  switch (e.code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kAlreadyExists:
      return Error(400, "ValidationException", e.message);
    case ErrorCode::kNotFound:
      return Error(400, "ObjectNotFoundException", e.message);
    case ErrorCode::kFailedPrecondition:
      return Error(400, "ConcurrentUpdateException", e.message);
    case ErrorCode::kResourceExhausted:
      return Error(400, "LimitExceededException", e.message);
    case ErrorCode::kUnimplemented:
      return Error(400, "UnknownOperationException", e.message);
    case ErrorCode::kUnavailable:
      return Error(503, "ServiceUnavailable", e.message);
    case ErrorCode::kInternal:
      break;
  }
  return Error(500, "InternalServiceException", e.message);
}

std::string TargetNotFound(const ScalableKey& k) {
  return fmt::format(
      "No scalable target registered for service namespace: {}, resource ID: {}, scalable "
      "dimension: {}",
      kNamespace, k.resource_id, k.dimension);
}

std::string RandomId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}{:016x}", rng(), rng());
}

// A key from the request: namespace, resource id and dimension, all required.
std::optional<ScalableKey> KeyOf(Validator& v, const json& in) {
  v.String(in, "ServiceNamespace", "", EnumRule(kNamespaces), true);
  auto id = v.String(in, "ResourceId", "", kIdRule, true);
  auto dim = v.String(in, "ScalableDimension", "", EnumRule(kDimensions), true);
  if (!id || !dim) return std::nullopt;
  return ScalableKey{*dim, *id};
}

// Paging over records listed by name: NextToken is the last name returned.
struct Page {
  int limit = 50;
  std::string after;
};
std::optional<Page> PageOf(Validator& v, const json& in) {
  Page p;
  if (auto n = v.Integer(in, "MaxResults", "", {1, 50}, false)) p.limit = static_cast<int>(*n);
  if (auto t = v.String(in, "NextToken", "", LengthRule(0, 2048), false)) p.after = *t;
  return p;
}

// Lists records of `kind` for targets matching the filters, paged: NextToken is the name of the
// last record returned, given only when more follow.
template <typename T, typename Keep>
Result<json> ListPage(store::Store& store, const std::string& account, std::string_view kind,
                      const Page& page, const char* member, Keep keep, bool newest_first = false) {
  CARVE_ASSIGN_OR_RETURN(auto records, store.List(account, std::string(kind), {}));
  if (newest_first) std::reverse(records.begin(), records.end());
  size_t i = 0;
  if (!page.after.empty()) {
    auto it = std::find_if(records.begin(), records.end(),
                           [&](const store::Record& r) { return r.key.name == page.after; });
    if (it == records.end()) return InvalidArgument("NextToken '" + page.after + "' is not valid");
    i = static_cast<size_t>(it - records.begin()) + 1;
  }
  json out = {{member, json::array()}};
  json& items = out[member];
  std::string last;
  for (; i < records.size(); ++i) {
    auto item = T::FromJson(json::parse(records[i].body));
    if (!item.has_value() || !keep(*item)) continue;
    if (static_cast<int>(items.size()) == page.limit) {
      out["NextToken"] = last;
      break;
    }
    json j = item->ToJson();
    j.erase("Carve");
    items.push_back(std::move(j));
    last = records[i].key.name;
  }
  return out;
}

bool Matches(const ScalableKey& k, const std::optional<std::string>& id,
             const std::optional<std::string>& dim) {
  return (!id || k.resource_id == *id) && (!dim || k.dimension == *dim);
}

// A CustomizedMetricSpecification: one of carve's own series, checked against the registry.
// The filters of the Describe operations: the namespace (required), a resource id, a
// dimension and, where the operation has one, a list of names.
struct Filters {
  std::optional<std::string> id;
  std::optional<std::string> dim;
  std::set<std::string> names;
  bool Keep(const ScalableKey& k, const std::string& name = "") const {
    return Matches(k, id, dim) && (names.empty() || names.contains(name));
  }
};
Filters FiltersOf(Validator& v, const json& in, std::string_view names_member = "") {
  Filters f;
  v.String(in, "ServiceNamespace", "", EnumRule(kNamespaces), true);
  f.id = v.String(in, "ResourceId", "", kIdRule, false);
  f.dim = v.String(in, "ScalableDimension", "", EnumRule(kDimensions), false);
  if (!names_member.empty()) {
    if (const json* list = v.List(in, names_member, "", 0, 50, false)) {
      for (const auto& n : *list) {
        if (n.is_string()) f.names.insert(n.get<std::string>());
      }
    }
  }
  return f;
}

// Creates the record, or updates it at `version` (what the caller read). Either way a refusal
// of the store's means another writer came first: a create finding the record made since it was
// read absent, an update finding a newer version. Both are ConcurrentUpdateException, as AWS
// answers a race; the caller may read again and retry.
Status Write(store::Store& store, const store::Key& key, const std::string& body,
             std::optional<int64_t> version) {
  auto written = version ? store.Update(key, body, *version) : store.Create(key, body);
  if (written.has_value()) return OkStatus();
  if (written.error().code == ErrorCode::kAlreadyExists) {
    return FailedPrecondition(key.name +
                              " was created by another request meanwhile; read it "
                              "and try again");
  }
  return written.error();
}

// Removes a target's named record (a policy, a scheduled action); `missing` is the
// ObjectNotFoundException message when there is none.
Result<json> RemoveNamed(store::Store& store, const std::string& account, std::string_view kind,
                         const ScalableKey& key, const std::string& name,
                         const std::string& missing) {
  auto rec = store.Get({account, std::string(kind), key.Name() + " " + name});
  if (!rec.has_value()) return NotFound(missing);
  CARVE_RETURN_IF_ERROR(store.Commit({store::Remove{rec->key, rec->version}}));
  return json::object();
}

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
  auto match = CustomMetricMatch(cm, account);
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
  for (const Metric& m : kMetrics) {
    if (m.name != *type) continue;
    if (m.dimension != key.dimension) {
      v.Fail(MemberPath(pp, "PredefinedMetricType"), *type,
             fmt::format("{} applies to scalable dimension {}, not {}", m.name, m.dimension,
                         key.dimension));
    }
    return;
  }
  std::string names;
  for (const Metric& m : kMetrics) names += (names.empty() ? "" : ", ") + std::string(m.name);
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

http::ApiResponse AutoScalingService::Handle(const http::ApiRequest& request) {
  using Op = Result<json> (AutoScalingService::*)(const std::string&, const json&);
  static const std::map<std::string, Op, std::less<>> kOps = {
      {"RegisterScalableTarget", &AutoScalingService::RegisterScalableTarget},
      {"DeregisterScalableTarget", &AutoScalingService::DeregisterScalableTarget},
      {"DescribeScalableTargets", &AutoScalingService::DescribeScalableTargets},
      {"PutScalingPolicy", &AutoScalingService::PutScalingPolicy},
      {"DescribeScalingPolicies", &AutoScalingService::DescribeScalingPolicies},
      {"DeleteScalingPolicy", &AutoScalingService::DeleteScalingPolicy},
      {"DescribeScalingActivities", &AutoScalingService::DescribeScalingActivities},
      {"PutScheduledAction", &AutoScalingService::PutScheduledAction},
      {"DescribeScheduledActions", &AutoScalingService::DescribeScheduledActions},
      {"DeleteScheduledAction", &AutoScalingService::DeleteScheduledAction},
  };
  auto op = kOps.find(request.operation);
  if (op == kOps.end()) {
    return Error(400, "UnknownOperationException",
                 "carve does not implement AnyScaleFrontendService." + request.operation);
  }
  // Bounded nesting, no repeated keys (common/bounded_json.h, issue 35).
  Result<json> parsed = ParseJson(request.body.empty() ? "{}" : request.body);
  if (!parsed.has_value()) {
    return Error(400, "ValidationException", "Request body " + parsed.error().message);
  }
  const json& in = *parsed;
  if (!in.is_object()) return Error(400, "ValidationException", "Request body must be an object");
  Result<json> out = [&]() -> Result<json> {
    try {
      std::lock_guard lock(mu_);
      return (this->*(op->second))(request.account_id, in);
    } catch (const std::exception& e) {
      return Internal(std::string("internal error: ") + e.what());
    }
  }();
  if (!out.has_value()) {
    if (out.error().code == ErrorCode::kInternal) {
      spdlog::error("{} for account {} failed: {}", request.operation, request.account_id,
                    out.error().message);
    }
    return ToAasError(out.error());
  }
  return {200, out->dump(), ""};
}

std::string AutoScalingService::Arn(const std::string& account, const std::string& what) const {
  return fmt::format("arn:aws:application-autoscaling:{}:{}:{}", options_.region, account, what);
}

Result<ScalableTarget> AutoScalingService::GetTarget(const std::string& account,
                                                     const ScalableKey& key) {
  auto rec = store_.Get({account, std::string(kTargetKind), key.Name()});
  if (!rec.has_value()) {
    if (rec.error().code == ErrorCode::kNotFound) return NotFound(TargetNotFound(key));
    return rec.error();
  }
  return ScalableTarget::FromJson(json::parse(rec->body));
}

Result<json> AutoScalingService::RegisterScalableTarget(const std::string& account,
                                                        const json& in) {
  Validator v;
  auto key = KeyOf(v, in);
  auto min = v.Integer(in, "MinCapacity", "", {0, kMaxCapacity}, false);
  auto max = v.Integer(in, "MaxCapacity", "", {0, kMaxCapacity}, false);
  v.String(in, "RoleARN", "", kIdRule, false);  // carve assumes no IAM role (docs/autoscaling.md).
  v.Unsupported(in, kUnsupportedRegister, "");
  const json* suspended = v.Object(in, "SuspendedState", "", false);
  if (suspended != nullptr) {
    for (const char* m :
         {"DynamicScalingInSuspended", "DynamicScalingOutSuspended", "ScheduledScalingSuspended"}) {
      v.Bool(*suspended, m, "suspendedState", false);
    }
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_RETURN_IF_ERROR(ValidateKey(*key));
  auto capacity = resources_.Get(account, *key);
  if (!capacity.has_value()) return InvalidArgument(capacity.error().message);

  const store::Key rkey{account, std::string(kTargetKind), key->Name()};
  auto existing = store_.Get(rkey);
  ScalableTarget t;
  std::optional<int64_t> version;
  if (existing.has_value()) {
    CARVE_ASSIGN_OR_RETURN(t, ScalableTarget::FromJson(json::parse(existing->body)));
    version = existing->version;
  } else {
    if (!min || !max) {
      return InvalidArgument(
          "MinCapacity and MaxCapacity are required to register a new scalable target");
    }
    t.key = *key;
    t.created_ms = clock_.UnixMillis();
    t.arn = Arn(account, "scalable-target/" + RandomId().substr(0, 28));
  }
  if (min) t.min = static_cast<int>(*min);
  if (max) t.max = static_cast<int>(*max);
  if (t.min > t.max) {
    return InvalidArgument(fmt::format(
        "Minimum capacity {} cannot be greater than maximum capacity {}", t.min, t.max));
  }
  if (suspended != nullptr) {
    t.scale_in_suspended = suspended->value("DynamicScalingInSuspended", t.scale_in_suspended);
    t.scale_out_suspended = suspended->value("DynamicScalingOutSuspended", t.scale_out_suspended);
    t.scheduled_suspended = suspended->value("ScheduledScalingSuspended", t.scheduled_suspended);
  }
  CARVE_RETURN_IF_ERROR(Write(store_, rkey, t.ToJson().dump(), version));
  // A capacity outside the new bounds is brought within them, as the service does.
  const int desired = std::clamp(capacity->desired, t.min, t.max);
  if (desired != capacity->desired) {
    Scale(account, t, capacity->desired, desired,
          fmt::format("minimum capacity was set to {} and maximum capacity to {}", t.min, t.max));
  }
  return json{{"ScalableTargetARN", t.arn}};
}

Result<json> AutoScalingService::DeregisterScalableTarget(const std::string& account,
                                                          const json& in) {
  Validator v;
  auto key = KeyOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  auto rec = store_.Get({account, std::string(kTargetKind), key->Name()});
  if (!rec.has_value()) return NotFound(TargetNotFound(*key));
  // The target's policies, scheduled actions and activities go with it, before it: more than
  // one commit holds on etcd, and a failure part-way leaves the target with fewer of them.
  std::vector<store::Mutation> writes;
  for (std::string_view kind : {kPolicyKind, kScheduledKind, kActivityKind}) {
    store::ListOptions lo;
    lo.name_prefix = key->Name() + " ";
    CARVE_ASSIGN_OR_RETURN(auto records, store_.List(account, std::string(kind), lo));
    for (const auto& r : records) writes.push_back(store::Remove{r.key, r.version});
  }
  CARVE_RETURN_IF_ERROR(
      store::CommitInSteps(store_, std::move(writes), store::Remove{rec->key, rec->version}));
  samples_.erase({account, *key});
  return json::object();
}

Result<json> AutoScalingService::DescribeScalableTargets(const std::string& account,
                                                         const json& in) {
  Validator v;
  v.String(in, "ServiceNamespace", "", EnumRule(kNamespaces), true);
  auto dim = v.String(in, "ScalableDimension", "", EnumRule(kDimensions), false);
  std::set<std::string> ids;
  if (const json* list = v.List(in, "ResourceIds", "", 0, 50, false)) {
    for (const auto& id : *list) {
      if (id.is_string()) ids.insert(id.get<std::string>());
    }
  }
  auto page = PageOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  return ListPage<ScalableTarget>(store_, account, kTargetKind, *page, "ScalableTargets",
                                  [&](const ScalableTarget& t) {
                                    return (ids.empty() || ids.contains(t.key.resource_id)) &&
                                           (!dim || t.key.dimension == *dim);
                                  });
}

Result<json> AutoScalingService::PutScalingPolicy(const std::string& account, const json& in) {
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
    ValidateTracking(v, *config, *key, options_.metrics, account);
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_RETURN_IF_ERROR(GetTarget(account, *key));

  const store::Key rkey{account, std::string(kPolicyKind), key->Name() + " " + *name};
  ScalingPolicy p;
  std::optional<int64_t> version;
  if (auto existing = store_.Get(rkey); existing.has_value()) {
    CARVE_ASSIGN_OR_RETURN(p, ScalingPolicy::FromJson(json::parse(existing->body)));
    version = existing->version;
  } else {
    store::ListOptions lo;
    lo.name_prefix = key->Name() + " ";
    CARVE_ASSIGN_OR_RETURN(auto others, store_.List(account, std::string(kPolicyKind), lo));
    if (others.size() >= 50) {
      return ResourceExhausted("A scalable target holds at most 50 scaling policies");
    }
    p.key = *key;
    p.name = *name;
    p.created_ms = clock_.UnixMillis();
    p.arn = fmt::format(
        "arn:aws:autoscaling:{}:{}:scalingPolicy:{}:resource/sagemaker/{}:"
        "policyName/{}",
        options_.region, account, RandomId().substr(0, 32), key->resource_id, *name);
  }
  p.type = policy_type;
  p.config = *config;
  CARVE_RETURN_IF_ERROR(Write(store_, rkey, p.ToJson().dump(), version));
  // carve creates no CloudWatch alarms: its own evaluation stands in for them.
  return json{{"PolicyARN", p.arn}, {"Alarms", json::array()}};
}

Result<json> AutoScalingService::DescribeScalingPolicies(const std::string& account,
                                                         const json& in) {
  Validator v;
  const Filters f = FiltersOf(v, in, "PolicyNames");
  auto page = PageOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  return ListPage<ScalingPolicy>(store_, account, kPolicyKind, *page, "ScalingPolicies",
                                 [&](const ScalingPolicy& p) { return f.Keep(p.key, p.name); });
}

Result<json> AutoScalingService::DeleteScalingPolicy(const std::string& account, const json& in) {
  Validator v;
  auto name = v.String(in, "PolicyName", "", kNameRule, true);
  auto key = KeyOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  return RemoveNamed(store_, account, kPolicyKind, *key, *name,
                     fmt::format("No scaling policy found for service namespace: {}, resource ID: "
                                 "{}, scalable dimension: {}, policy name: {}",
                                 kNamespace, key->resource_id, key->dimension, *name));
}

Result<json> AutoScalingService::DescribeScalingActivities(const std::string& account,
                                                           const json& in) {
  Validator v;
  const Filters f = FiltersOf(v, in);
  v.Unsupported(in, kUnsupportedActivities, "");
  auto page = PageOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  return ListPage<ScalingActivity>(
      store_, account, kActivityKind, *page, "ScalingActivities",
      [&](const ScalingActivity& a) { return f.Keep(a.key); }, /*newest_first=*/true);
}

Result<json> AutoScalingService::PutScheduledAction(const std::string& account, const json& in) {
  Validator v;
  auto name = v.String(in, "ScheduledActionName", "", kNameRule, true);
  auto key = KeyOf(v, in);
  auto schedule = v.String(in, "Schedule", "", kIdRule, false);
  auto zone = v.String(in, "Timezone", "", kIdRule, false);
  auto start = v.Number(in, "StartTime", "", {}, false);
  auto end = v.Number(in, "EndTime", "", {}, false);
  const json* action = v.Object(in, "ScalableTargetAction", "", false);
  std::optional<int64_t> min, max;
  if (action != nullptr) {
    min = v.Integer(*action, "MinCapacity", "scalableTargetAction", {0, kMaxCapacity}, false);
    max = v.Integer(*action, "MaxCapacity", "scalableTargetAction", {0, kMaxCapacity}, false);
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_RETURN_IF_ERROR(ValidateKey(*key));
  if (zone && *zone != "UTC" && *zone != "Etc/UTC") {
    return InvalidArgument("Timezone '" + *zone + "': carve evaluates schedules in UTC only");
  }
  if (schedule) CARVE_RETURN_IF_ERROR(ParseSchedule(*schedule));
  if (min && max && *min > *max) {
    return InvalidArgument(
        fmt::format("Minimum capacity {} cannot be greater than maximum capacity {}", *min, *max));
  }
  CARVE_RETURN_IF_ERROR(GetTarget(account, *key));
  const store::Key rkey{account, std::string(kScheduledKind), key->Name() + " " + *name};
  ScheduledAction a;
  std::optional<int64_t> version;
  if (auto existing = store_.Get(rkey); existing.has_value()) {
    CARVE_ASSIGN_OR_RETURN(a, ScheduledAction::FromJson(json::parse(existing->body)));
    version = existing->version;
  } else {
    if (!schedule) return InvalidArgument("Schedule is required for a new scheduled action");
    a.key = *key;
    a.name = *name;
    a.created_ms = clock_.UnixMillis();
    a.arn = Arn(account, fmt::format("scheduledAction:{}:resource/sagemaker/{}:"
                                     "scheduledActionName/{}",
                                     RandomId().substr(0, 32), key->resource_id, *name));
  }
  if (schedule) a.schedule = *schedule;
  if (start) a.start_ms = static_cast<int64_t>(*start * 1000);
  if (end) a.end_ms = static_cast<int64_t>(*end * 1000);
  if (action != nullptr) {
    a.min = min;
    a.max = max;
  }
  CARVE_RETURN_IF_ERROR(Write(store_, rkey, a.ToJson().dump(), version));
  return json::object();
}

Result<json> AutoScalingService::DescribeScheduledActions(const std::string& account,
                                                          const json& in) {
  Validator v;
  const Filters f = FiltersOf(v, in, "ScheduledActionNames");
  auto page = PageOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  return ListPage<ScheduledAction>(store_, account, kScheduledKind, *page, "ScheduledActions",
                                   [&](const ScheduledAction& a) { return f.Keep(a.key, a.name); });
}

Result<json> AutoScalingService::DeleteScheduledAction(const std::string& account, const json& in) {
  Validator v;
  auto name = v.String(in, "ScheduledActionName", "", kNameRule, true);
  auto key = KeyOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  auto rec = store_.Get({account, std::string(kScheduledKind), key->Name() + " " + *name});
  if (!rec.has_value()) {
    return NotFound(fmt::format(
        "No scheduled action found for service namespace: {}, resource ID: {}, scalable "
        "dimension: {}, scheduled action name: {}",
        kNamespace, key->resource_id, key->dimension, *name));
  }
  CARVE_RETURN_IF_ERROR(store_.Commit({store::Remove{rec->key, rec->version}}));
  return json::object();
}

}  // namespace carve::server::autoscaling
