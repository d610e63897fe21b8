// The scheduled-action operations.
#include <fmt/format.h>

#include <algorithm>

#include "server/autoscaling/ops.h"

namespace carve::server::autoscaling {

Result<json> PutScheduledAction(const OpContext& ctx, const std::string& account, const json& in) {
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
  CARVE_RETURN_IF_ERROR(GetTarget(ctx, account, *key));
  const store::Key rkey{account, std::string(kScheduledKind), key->Name() + " " + *name};
  ScheduledAction a;
  std::optional<int64_t> version;
  if (auto existing = ctx.store.Get(rkey); existing.has_value()) {
    CARVE_ASSIGN_OR_RETURN(a, ScheduledAction::FromJson(json::parse(existing->body)));
    version = existing->version;
  } else {
    if (!schedule) return InvalidArgument("Schedule is required for a new scheduled action");
    a.key = *key;
    a.name = *name;
    a.created_ms = ctx.clock.UnixMillis();
    a.arn = ctx.Arn(account, fmt::format("scheduledAction:{}:resource/sagemaker/{}:"
                                         "scheduledActionName/{}",
                                         RandomId(32), key->resource_id, *name));
  }
  if (schedule) a.schedule = *schedule;
  if (start) a.start_ms = static_cast<int64_t>(*start * 1000);
  if (end) a.end_ms = static_cast<int64_t>(*end * 1000);
  if (action != nullptr) {
    a.min = min;
    a.max = max;
  }
  CARVE_RETURN_IF_ERROR(Write(ctx.store, rkey, a.ToJson().dump(), version));
  return json::object();
}

Result<json> DescribeScheduledActions(const OpContext& ctx, const std::string& account,
                                      const json& in) {
  Validator v;
  const Filters f = FiltersOf(v, in, "ScheduledActionNames");
  auto page = PageOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  return ListPage<ScheduledAction>(ctx.store, account, kScheduledKind, *page, "ScheduledActions",
                                   [&](const ScheduledAction& a) { return f.Keep(a.key, a.name); });
}

Result<json> DeleteScheduledAction(const OpContext& ctx, const std::string& account,
                                   const json& in) {
  Validator v;
  auto name = v.String(in, "ScheduledActionName", "", kNameRule, true);
  auto key = KeyOf(v, in);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  auto rec = ctx.store.Get({account, std::string(kScheduledKind), key->Name() + " " + *name});
  if (!rec.has_value()) {
    return NotFound(fmt::format(
        "No scheduled action found for service namespace: {}, resource ID: {}, scalable "
        "dimension: {}, scheduled action name: {}",
        kNamespace, key->resource_id, key->dimension, *name));
  }
  CARVE_RETURN_IF_ERROR(ctx.store.Commit({store::Remove{rec->key, rec->version}}));
  return json::object();
}

}  // namespace carve::server::autoscaling
