// The scalable-target operations, and DescribeScalingActivities.
#include <fmt/format.h>

#include <algorithm>

#include "server/autoscaling/ops.h"
#include "store/commit_in_steps.h"

namespace carve::server::autoscaling {

namespace {

constexpr UnsupportedMember kUnsupportedRegister[] = {
    {"Tags", "tags on scalable targets are not implemented; omit them"},
};
constexpr UnsupportedMember kUnsupportedActivities[] = {
    {"IncludeNotScaledActivities",
     "carve records only activities that scaled; omit it or set it to false", false},
};

}  // namespace

Result<json> RegisterScalableTarget(const OpContext& ctx, const std::string& account,
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
  auto capacity = ctx.resources.Get(account, *key);
  if (!capacity.has_value()) return InvalidArgument(capacity.error().message);

  const store::Key rkey{account, std::string(kTargetKind), key->Name()};
  auto existing = ctx.store.Get(rkey);
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
    t.created_ms = ctx.clock.UnixMillis();
    t.arn = ctx.Arn(account, "scalable-target/" + RandomId(36));
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
  CARVE_RETURN_IF_ERROR(Write(ctx.store, rkey, t.ToJson().dump(), version));
  // A capacity outside the new bounds is brought within them, as the service does.
  const int desired = std::clamp(capacity->desired, t.min, t.max);
  if (desired != capacity->desired) {
    ctx.activities.Scale(
        ctx.resources, account, t.key, capacity->desired, desired,
        fmt::format("minimum capacity was set to {} and maximum capacity to {}", t.min, t.max));
  }
  return json{{"ScalableTargetARN", t.arn}};
}

Result<json> DeregisterScalableTarget(const OpContext& ctx, const std::string& account,
                                      const json& in) {
  Validator v;
  auto key = KeyOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  auto rec = ctx.store.Get({account, std::string(kTargetKind), key->Name()});
  if (!rec.has_value()) return NotFound(TargetNotFound(*key));
  // The target's policies, scheduled actions and activities go with it, before it: more than
  // one commit holds on etcd, and a failure part-way leaves the target with fewer of them.
  std::vector<store::Mutation> writes;
  for (std::string_view kind : {kPolicyKind, kScheduledKind, kActivityKind}) {
    store::ListOptions lo;
    lo.name_prefix = key->Name() + " ";
    CARVE_ASSIGN_OR_RETURN(auto records, ctx.store.List(account, std::string(kind), lo));
    for (const auto& r : records) writes.push_back(store::Remove{r.key, r.version});
  }
  CARVE_RETURN_IF_ERROR(
      store::CommitInSteps(ctx.store, std::move(writes), store::Remove{rec->key, rec->version}));
  ctx.forget_samples(account, *key);
  return json::object();
}

Result<json> DescribeScalableTargets(const OpContext& ctx, const std::string& account,
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
  return ListPage<ScalableTarget>(ctx.store, account, kTargetKind, *page, "ScalableTargets",
                                  [&](const ScalableTarget& t) {
                                    return (ids.empty() || ids.contains(t.key.resource_id)) &&
                                           (!dim || t.key.dimension == *dim);
                                  });
}

Result<json> DescribeScalingActivities(const OpContext& ctx, const std::string& account,
                                       const json& in) {
  Validator v;
  const Filters f = FiltersOf(v, in);
  v.Unsupported(in, kUnsupportedActivities, "");
  auto page = PageOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  return ListPage<ScalingActivity>(
      ctx.store, account, kActivityKind, *page, "ScalingActivities",
      [&](const ScalingActivity& a) { return f.Keep(a.key); }, /*newest_first=*/true);
}

}  // namespace carve::server::autoscaling
