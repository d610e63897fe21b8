// CreateEndpoint, DescribeEndpoint, DeleteEndpoint, ListEndpoints, UpdateEndpoint. The work
// (claiming nodes, carving GPUs, releasing them) happens in the reconciler; these handlers only
// record the wanted state, under the service's state lock.
#include <fmt/format.h>

#include <set>
#include <string>

#include "server/sagemaker/endpoint_record.h"
#include "server/sagemaker/ops.h"

namespace carve::server::sagemaker {
namespace {

json Summary(const OpContext& ctx, const store::Record& r, const json& body) {
  return {{"EndpointName", r.key.name},
          {"EndpointArn", ctx.Arn(r.key.account, kEndpoint, r.key.name)},
          {"CreationTime", EpochSeconds(r.created_ms)},
          {"LastModifiedTime", EpochSeconds(r.updated_ms)},
          {"EndpointStatus", body.value("EndpointStatus", "")}};
}

constexpr std::string_view kNoDeploymentConfig =
    "blue/green and rolling endpoint deployments are not implemented: an endpoint update "
    "changes nothing that runs (its layout and instance counts must stay), so there is nothing "
    "to deploy in steps; omit it";

constexpr UnsupportedMember kUnsupportedCreate[] = {{"DeploymentConfig", kNoDeploymentConfig}};

constexpr UnsupportedMember kUnsupportedUpdate[] = {
    {"DeploymentConfig", kNoDeploymentConfig},
    {"RetainDeploymentConfig", "there is no deployment configuration to retain; omit it or set "
                               "false", false},
    {"RetainAllVariantProperties",
     "variant properties always come from the new endpoint configuration; omit it or set false",
     false},
    {"ExcludeRetainedVariantProperties",
     "variant properties always come from the new endpoint configuration; omit it"},
};

// Variants of a stored endpoint configuration, with the layouts CreateEndpointConfig placed
// (configs stored before layouts were kept are placed now).
Result<std::vector<VariantSpec>> ConfigVariants(const json& config) {
  Validator v;
  std::vector<VariantSpec> out;
  const json* list = v.List(config, "ProductionVariants", "", 1, 10, true);
  if (list != nullptr) {
    for (size_t i = 0; i < list->size(); ++i) {
      auto spec = ValidateVariant(v, (*list)[i], ElementPath("productionVariants", i),
                                  /*refuse_unsupported=*/false);
      if (spec) out.push_back(std::move(*spec));
    }
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  const json layouts = config.value(std::string(kCarveLayouts), json::object());
  for (auto& spec : out) {
    if (!spec.partition_types) continue;
    if (layouts.contains(spec.name)) {
      CARVE_ASSIGN_OR_RETURN(spec.layout, LayoutFromJson(spec, layouts.at(spec.name)));
    } else {
      CARVE_ASSIGN_OR_RETURN(spec.layout, CheckVariantLayout(spec));
    }
  }
  return out;
}

Status RefuseUnlessInService(const EndpointRecord& ep, const std::string& arn) {
  if (ep.status == EndpointStatus::kInService) return OkStatus();
  return FailedPrecondition(
      fmt::format("Cannot update in-progress endpoint \"{}\" (status {}).", arn, Name(ep.status)));
}

// Records the endpoint Updating, so the reconciler carries the change out.
Result<json> RecordUpdating(const OpContext& ctx, const store::Record& rec, EndpointRecord ep,
                            const std::string& arn) {
  ep.status = EndpointStatus::kUpdating;
  ep.status_since_ms = ctx.clock().UnixMillis();
  CARVE_RETURN_IF_ERROR(ctx.store().Update(rec.key, ep.ToJson().dump(), rec.version));
  ctx.Notify();
  return json{{"EndpointArn", arn}};
}

bool SameLayout(const VariantSpec& a, const VariantSpec& b) {
  return a.partition_types == b.partition_types;  // Order counts, as on SageMaker.
}

}  // namespace

Result<json> CreateEndpoint(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointName", "", kEndpointNameRule, true);
  auto config_name = v.String(in, "EndpointConfigName", "", kEndpointNameRule, true);
  v.Unsupported(in, kUnsupportedCreate, "");
  auto tags = ValidateTags(v, in, "Tags", "");
  CARVE_RETURN_IF_ERROR(v.ToStatus());

  std::lock_guard lock(ctx.state_mu());
  CARVE_ASSIGN_OR_RETURN(store::Record cfg_rec,
                         ctx.Get(req.account_id, kEndpointConfig, *config_name));
  CARVE_ASSIGN_OR_RETURN(json cfg, Body(cfg_rec));
  CARVE_ASSIGN_OR_RETURN(auto variants, ConfigVariants(cfg));
  EndpointRecord ep;
  ep.name = *name;
  ep.config_name = *config_name;
  ep.status = EndpointStatus::kCreating;
  ep.variants = std::move(variants);
  ep.tags = tags.value_or(json::array());
  ep.status_since_ms = ctx.clock().UnixMillis();
  CARVE_RETURN_IF_ERROR(ctx.CheckRoomFor(req.account_id, kEndpoint));
  auto rec =
      ctx.store().Create({req.account_id, std::string(kEndpoint), *name}, ep.ToJson().dump());
  if (!rec.has_value()) {
    if (rec.error().code == ErrorCode::kAlreadyExists) {
      return ctx.AlreadyExists(req.account_id, kEndpoint, *name);
    }
    return rec.error();
  }
  ctx.Notify();
  return json{{"EndpointArn", ctx.Arn(req.account_id, kEndpoint, *name)}};
}

Result<json> DescribeEndpoint(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointName", "", kEndpointNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.Get(req.account_id, kEndpoint, *name));
  return EndpointDescription(ctx, rec);
}

Result<json> EndpointDescription(const OpContext& ctx, const store::Record& rec) {
  CARVE_ASSIGN_OR_RETURN(EndpointRecord ep, EndpointRecord::FromRecord(rec));
  json out = {{"EndpointName", ep.name},
              {"EndpointArn", ctx.Arn(rec.key.account, kEndpoint, ep.name)},
              {"EndpointConfigName", ep.config_name},
              {"EndpointStatus", Name(ep.status)},
              {"CreationTime", EpochSeconds(rec.created_ms)},
              {"LastModifiedTime", EpochSeconds(rec.updated_ms)}};
  if (!ep.failure_reason.empty()) out["FailureReason"] = FitUtf8(ep.failure_reason, kMaxMessage);
  json variants = json::array();
  const bool running = IsCarved(ep.status);
  nodes::NodeRegistry* registry = ctx.registry();
  for (const auto& var : ep.variants) {
    // Lost capacity: instances whose agents stopped reporting count out of CurrentInstanceCount,
    // and the variant's status says which and what happens to their copies.
    std::vector<std::string> lost;
    if (registry != nullptr) {
      for (auto& [node, why] : registry->NotReadyAmong(var.nodes)) {
        lost.push_back(node + " (" + why + ")");
      }
    }
    const int current = static_cast<int>(var.nodes.size() - lost.size());
    json vs = {{"VariantName", var.name},
               {"CurrentWeight", var.weight},
               {"DesiredWeight", var.desired_weight},
               {"CurrentInstanceCount", running ? current : 0},
               {"DesiredInstanceCount", var.instance_count}};
    if (var.managed) {
      vs["ManagedInstanceScaling"] = {{"Status", var.managed->enabled ? "ENABLED" : "DISABLED"},
                                      {"MinInstanceCount", var.managed->min},
                                      {"MaxInstanceCount", var.managed->max},
                                      {"ScaleInPolicy", {{"Strategy", "IDLE_RELEASE"}}}};
    }
    if (running && !lost.empty()) {
      vs["VariantStatus"] = json::array(
          {{{"Status", "Updating"},
            {"StatusMessage",
             FitUtf8(fmt::format("{} of {} instances NotReady: {}. Their copies are "
                                 "rescheduled onto free partitions of the other instances, or "
                                 "wait for room.",
                                 lost.size(), var.nodes.size(), JoinNodes(lost)),
                     kMaxMessage)},
            {"StartTime", EpochSeconds(ep.status_since_ms)}}});
    }
    if (ep.status == EndpointStatus::kCreating || ep.status == EndpointStatus::kUpdating ||
        ep.status == EndpointStatus::kDeleting) {
      std::string message =
          ep.status == EndpointStatus::kCreating
              ? fmt::format("{} x {}: {}; partition layout {}", var.instance_count,
                            var.instance_type,
                            var.nodes.empty() ? "claiming instances"
                                              : "carving GPUs on " + JoinNodes(var.nodes),
                            LayoutName(var))
              : fmt::format("{} x {}, partition layout {}", var.instance_count, var.instance_type,
                            LayoutName(var));
      const int staying = static_cast<int>(var.nodes.size() - var.draining.size());
      if (ep.status == EndpointStatus::kUpdating && !var.draining.empty()) {
        message += fmt::format("; removing {}: their copies are placed again on the other "
                               "instances, then their GPUs are reset",
                               JoinNodes(var.draining));
      } else if (ep.status == EndpointStatus::kUpdating && staying < var.instance_count) {
        message += fmt::format("; adding {} instance{} (claiming and carving)",
                               var.instance_count - staying,
                               var.instance_count - staying == 1 ? "" : "s");
      }
      vs["VariantStatus"] = json::array({{{"Status", Name(ep.status)},
                                          {"StatusMessage", FitUtf8(message, kMaxMessage)},
                                          {"StartTime", EpochSeconds(ep.status_since_ms)}}});
    }
    variants.push_back(vs);
  }
  out["ProductionVariants"] = variants;
  return out;
}

Result<json> DeleteEndpoint(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointName", "", kEndpointNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  std::lock_guard lock(ctx.state_mu());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.Get(req.account_id, kEndpoint, *name));
  CARVE_ASSIGN_OR_RETURN(EndpointRecord ep, EndpointRecord::FromRecord(rec));
  if (ep.status == EndpointStatus::kDeleting) return json::object();
  CARVE_ASSIGN_OR_RETURN(auto components,
                         ctx.store().List(req.account_id, std::string(kInferenceComponent), {}));
  std::vector<std::string> attached;
  for (const auto& c : components) {
    CARVE_ASSIGN_OR_RETURN(json body, Body(c));
    if (body.value("EndpointName", "") == *name) attached.push_back(c.key.name);
  }
  if (!attached.empty()) {
    return FailedPrecondition(
        fmt::format("Endpoint \"{}\" still hosts inference components [{}]; delete them first.",
                    ctx.Arn(req.account_id, kEndpoint, *name), JoinNodes(attached)));
  }
  // As SageMaker: an endpoint being created or changed is not deleted under the work. Neither
  // waits forever: a carve that nodes do not report within its timeout fails the endpoint.
  if (ep.status == EndpointStatus::kCreating || ep.status == EndpointStatus::kUpdating ||
      ep.status == EndpointStatus::kSystemUpdating || ep.status == EndpointStatus::kRollingBack) {
    return FailedPrecondition(
        fmt::format("Cannot delete in-progress endpoint \"{}\" (status {}); retry once it is "
                    "InService or Failed.",
                    ctx.Arn(req.account_id, kEndpoint, *name), Name(ep.status)));
  }
  ep.status = EndpointStatus::kDeleting;
  ep.status_since_ms = ctx.clock().UnixMillis();
  CARVE_RETURN_IF_ERROR(ctx.store().Update(rec.key, ep.ToJson().dump(), rec.version));
  ctx.Notify();
  return json::object();
}

Result<json> ListEndpoints(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  static const ListSpec spec{kEndpoint, "Endpoints", "EndpointStatus", true, EndpointStatusNames(),
                             &Summary,  {},          nullptr};
  return ListResources(ctx, req, in, spec);
}

Result<json> UpdateEndpoint(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointName", "", kEndpointNameRule, true);
  auto config_name = v.String(in, "EndpointConfigName", "", kEndpointNameRule, true);
  v.Unsupported(in, kUnsupportedUpdate, "");
  CARVE_RETURN_IF_ERROR(v.ToStatus());

  std::lock_guard lock(ctx.state_mu());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.Get(req.account_id, kEndpoint, *name));
  CARVE_ASSIGN_OR_RETURN(EndpointRecord ep, EndpointRecord::FromRecord(rec));
  const std::string arn = ctx.Arn(req.account_id, kEndpoint, *name);
  CARVE_RETURN_IF_ERROR(RefuseUnlessInService(ep, arn));
  CARVE_ASSIGN_OR_RETURN(store::Record cfg_rec,
                         ctx.Get(req.account_id, kEndpointConfig, *config_name));
  CARVE_ASSIGN_OR_RETURN(json cfg, Body(cfg_rec));
  CARVE_ASSIGN_OR_RETURN(auto variants, ConfigVariants(cfg));
  for (const auto& old : ep.variants) {
    const VariantSpec* now = nullptr;
    for (const auto& nv : variants) now = nv.name == old.name ? &nv : now;
    if (now == nullptr) {
      return InvalidArgument(fmt::format(
          "Endpoint configuration {} has no variant {}, which endpoint {} runs; carve keeps an "
          "endpoint's variants for its lifetime.",
          *config_name, old.name, *name));
    }
    if (!SameLayout(old, *now)) {
      return InvalidArgument(fmt::format(
          "Variant {} of endpoint {} is carved with partition layout {}; endpoint configuration "
          "{} declares {}. A partition layout is fixed for an endpoint's lifetime (the same "
          "types in another order count as a different layout): create a new endpoint to "
          "re-carve.",
          old.name, *name, LayoutName(old), *config_name, LayoutName(*now)));
    }
    if (old.instance_type != now->instance_type) {
      return InvalidArgument(fmt::format(
          "Variant {} of endpoint {} runs {}; endpoint configuration {} asks for {}. An "
          "endpoint's instance type is fixed for its lifetime (its GPUs are carved for it): "
          "create a new endpoint.",
          old.name, *name, old.instance_type, *config_name, now->instance_type));
    }
  }
  if (variants.size() != ep.variants.size()) {
    return InvalidArgument(fmt::format(
        "Endpoint configuration {} has {} variants; endpoint {} runs {}. carve keeps an "
        "endpoint's variants for its lifetime.",
        *config_name, variants.size(), *name, ep.variants.size()));
  }
  // The new config's instance counts and weights; the reconciler claims or releases instances.
  for (auto& var : ep.variants) {
    for (const auto& nv : variants) {
      if (nv.name != var.name) continue;
      var.instance_count = nv.instance_count;
      var.desired_weight = nv.desired_weight;
      var.managed = nv.managed;
    }
  }
  ep.failure_reason.clear();
  ep.config_name = *config_name;
  return RecordUpdating(ctx, rec, std::move(ep), arn);
}

constexpr UnsupportedMember kUnsupportedCapacity[] = {
    {"ServerlessUpdateConfig", "carve serves instance-based variants only; omit it"},
};

Result<json> UpdateEndpointWeightsAndCapacities(const OpContext& ctx, const http::ApiRequest& req,
                                                const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointName", "", kEndpointNameRule, true);
  struct Change {
    std::string variant;
    std::optional<double> weight;
    std::optional<int64_t> count;
  };
  std::vector<Change> changes;
  std::set<std::string> named;  // A variant named twice would silently keep one of the two.
  if (const json* list = v.List(in, "DesiredWeightsAndCapacities", "", 1, 10, true)) {
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string path = ElementPath("desiredWeightsAndCapacities", i);
      const json& item = (*list)[i];
      v.Unsupported(item, kUnsupportedCapacity, path);
      auto variant = v.String(item, "VariantName", path, kEndpointNameRule, true);
      auto weight = v.Number(item, "DesiredWeight", path, {0, {}}, false);
      auto count = v.Integer(item, "DesiredInstanceCount", path, {0, {}}, false);
      if (count && *count == 0) {
        v.Fail(MemberPath(path, "DesiredInstanceCount"), "0",
               "carve keeps at least one instance per variant (ManagedInstanceScaling with "
               "MinInstanceCount 0, which scales a variant to zero, is not implemented)");
      }
      if (variant && !named.insert(*variant).second) {
        v.Fail(MemberPath(path, "VariantName"), *variant,
               "Member must name each variant at most once in DesiredWeightsAndCapacities");
      }
      if (variant) changes.push_back({*variant, weight, count});
    }
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());

  std::lock_guard lock(ctx.state_mu());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.Get(req.account_id, kEndpoint, *name));
  CARVE_ASSIGN_OR_RETURN(EndpointRecord ep, EndpointRecord::FromRecord(rec));
  const std::string arn = ctx.Arn(req.account_id, kEndpoint, *name);
  CARVE_RETURN_IF_ERROR(RefuseUnlessInService(ep, arn));
  std::vector<std::string> unknown;
  for (const Change& c : changes) {
    VariantSpec* var = nullptr;
    for (auto& x : ep.variants) var = x.name == c.variant ? &x : var;
    if (var == nullptr) {
      unknown.push_back(c.variant);
      continue;
    }
    if (c.count) var->instance_count = static_cast<int>(*c.count);
    if (c.weight) var->desired_weight = *c.weight;
  }
  if (!unknown.empty()) {
    return InvalidArgument(fmt::format("The variant(s) \"[{}]\" is/are not present in endpoint "
                                       "\"{}\".",
                                       JoinNodes(unknown), arn));
  }
  ep.failure_reason.clear();
  return RecordUpdating(ctx, rec, std::move(ep), arn);
}

}  // namespace carve::server::sagemaker
