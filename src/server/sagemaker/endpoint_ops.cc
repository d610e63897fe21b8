// CreateEndpoint, DescribeEndpoint, DeleteEndpoint, ListEndpoints, UpdateEndpoint. The work
// (claiming nodes, carving GPUs, releasing them) happens in the reconciler; these handlers only
// record the wanted state, under the service's state lock.
#include <fmt/format.h>

#include "server/sagemaker/endpoint_record.h"
#include "server/sagemaker/ops.h"

namespace carve::server::sagemaker {
namespace {

using Ops = SageMakerService::Ops;

constexpr std::string_view kEndpointStatuses[] = {
    "OutOfService", "Creating", "Updating", "SystemUpdating",      "RollingBack",
    "InService",    "Deleting", "Failed",   "UpdateRollbackFailed"};

json Summary(const SageMakerService& s, const store::Record& r, const json& body) {
  return {{"EndpointName", r.key.name},
          {"EndpointArn", Ops::Arn(s, r.key.account, kEndpoint, r.key.name)},
          {"CreationTime", EpochSeconds(r.created_ms)},
          {"LastModifiedTime", EpochSeconds(r.updated_ms)},
          {"EndpointStatus", body.value("EndpointStatus", "")}};
}

// Variants of a stored endpoint configuration.
Result<std::vector<VariantSpec>> ConfigVariants(const json& config) {
  Validator v;
  std::vector<VariantSpec> out;
  const json* list = v.List(config, "ProductionVariants", "", 1, 10, true);
  if (list != nullptr) {
    for (size_t i = 0; i < list->size(); ++i) {
      auto spec = ValidateVariant(v, (*list)[i], ElementPath("productionVariants", i));
      if (spec) out.push_back(std::move(*spec));
    }
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  return out;
}

bool SameLayout(const VariantSpec& a, const VariantSpec& b) {
  return a.partition_types == b.partition_types;  // Order counts, as on SageMaker.
}

}  // namespace

Result<json> Ops::CreateEndpoint(SageMakerService& s, const ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointName", "", kEndpointNameRule, true);
  auto config_name = v.String(in, "EndpointConfigName", "", kEndpointNameRule, true);
  auto tags = ValidateTags(v, in, "Tags", "");
  CARVE_RETURN_IF_ERROR(v.ToStatus());

  std::lock_guard lock(mu(s));
  CARVE_ASSIGN_OR_RETURN(store::Record cfg_rec,
                         Get(s, req.account_id, kEndpointConfig, *config_name));
  CARVE_ASSIGN_OR_RETURN(json cfg, Body(cfg_rec));
  CARVE_ASSIGN_OR_RETURN(auto variants, ConfigVariants(cfg));
  EndpointRecord ep;
  ep.name = *name;
  ep.config_name = *config_name;
  ep.status = "Creating";
  ep.variants = std::move(variants);
  ep.tags = tags.value_or(json::array());
  ep.status_since_ms = clock(s).UnixMillis();
  auto rec = store(s).Create({req.account_id, std::string(kEndpoint), *name}, ep.ToJson().dump());
  if (!rec.has_value()) {
    if (rec.error().code == ErrorCode::kAlreadyExists) {
      return AlreadyExistsError(s, req.account_id, kEndpoint, *name);
    }
    return rec.error();
  }
  Notify(s);
  return json{{"EndpointArn", Arn(s, req.account_id, kEndpoint, *name)}};
}

Result<json> Ops::DescribeEndpoint(SageMakerService& s, const ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointName", "", kEndpointNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, Get(s, req.account_id, kEndpoint, *name));
  CARVE_ASSIGN_OR_RETURN(EndpointRecord ep, EndpointRecord::FromRecord(rec));
  json out = {{"EndpointName", ep.name},
              {"EndpointArn", Arn(s, req.account_id, kEndpoint, ep.name)},
              {"EndpointConfigName", ep.config_name},
              {"EndpointStatus", ep.status},
              {"CreationTime", EpochSeconds(rec.created_ms)},
              {"LastModifiedTime", EpochSeconds(rec.updated_ms)}};
  if (!ep.failure_reason.empty()) out["FailureReason"] = ep.failure_reason;
  json variants = json::array();
  const bool running = ep.status == "InService" || ep.status == "Updating";
  nodes::NodeRegistry* registry = Ops::registry(s);
  for (const auto& var : ep.variants) {
    // Lost capacity: instances whose agents stopped reporting count out of CurrentInstanceCount,
    // and the variant's status says which and what happens to their copies.
    std::vector<std::string> lost;
    for (const auto& node : var.nodes) {
      auto view = registry != nullptr ? registry->Node(NodeId(node)) : std::nullopt;
      if (view && !view->ready) lost.push_back(node + " (" + view->not_ready_reason + ")");
    }
    const int current = static_cast<int>(var.nodes.size() - lost.size());
    json vs = {{"VariantName", var.name},
               {"CurrentWeight", 1.0},
               {"DesiredWeight", 1.0},
               {"CurrentInstanceCount", running ? current : 0},
               {"DesiredInstanceCount", var.instance_count}};
    if (running && !lost.empty()) {
      vs["VariantStatus"] = json::array(
          {{{"Status", "Updating"},
            {"StatusMessage",
             fmt::format("{} of {} instances NotReady: {}. Their copies are rescheduled onto "
                         "free partitions of the other instances, or wait for room.",
                         lost.size(), var.nodes.size(), JoinNodes(lost))},
            {"StartTime", EpochSeconds(ep.status_since_ms)}}});
    }
    if (ep.status == "Creating" || ep.status == "Updating" || ep.status == "Deleting") {
      std::string message =
          ep.status == "Creating"
              ? fmt::format("{} x {}: {}; partition layout {}", var.instance_count,
                            var.instance_type,
                            var.nodes.empty() ? "claiming instances"
                                              : "carving GPUs on " + JoinNodes(var.nodes),
                            LayoutName(var))
              : fmt::format("{} x {}, partition layout {}", var.instance_count, var.instance_type,
                            LayoutName(var));
      vs["VariantStatus"] = json::array({{{"Status", ep.status},
                                          {"StatusMessage", message},
                                          {"StartTime", EpochSeconds(ep.status_since_ms)}}});
    }
    variants.push_back(vs);
  }
  out["ProductionVariants"] = variants;
  return out;
}

Result<json> Ops::DeleteEndpoint(SageMakerService& s, const ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointName", "", kEndpointNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  std::lock_guard lock(mu(s));
  CARVE_ASSIGN_OR_RETURN(store::Record rec, Get(s, req.account_id, kEndpoint, *name));
  CARVE_ASSIGN_OR_RETURN(EndpointRecord ep, EndpointRecord::FromRecord(rec));
  if (ep.status == "Deleting") return json::object();
  CARVE_ASSIGN_OR_RETURN(auto components,
                         store(s).List(req.account_id, std::string(kInferenceComponent), {}));
  std::vector<std::string> attached;
  for (const auto& c : components) {
    CARVE_ASSIGN_OR_RETURN(json body, Body(c));
    if (body.value("EndpointName", "") == *name) attached.push_back(c.key.name);
  }
  if (!attached.empty()) {
    return FailedPrecondition(
        fmt::format("Endpoint \"{}\" still hosts inference components [{}]; delete them first.",
                    Arn(s, req.account_id, kEndpoint, *name), JoinNodes(attached)));
  }
  ep.status = "Deleting";
  ep.status_since_ms = clock(s).UnixMillis();
  CARVE_RETURN_IF_ERROR(store(s).Update(rec.key, ep.ToJson().dump(), rec.version));
  Notify(s);
  return json::object();
}

Result<json> Ops::ListEndpoints(SageMakerService& s, const ApiRequest& req, const json& in) {
  static const ListSpec spec{kEndpoint, "Endpoints", "EndpointStatus", true, kEndpointStatuses,
                             &Summary,  {},          nullptr};
  return ListResources(s, req, in, spec);
}

Result<json> Ops::UpdateEndpoint(SageMakerService& s, const ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointName", "", kEndpointNameRule, true);
  auto config_name = v.String(in, "EndpointConfigName", "", kEndpointNameRule, true);
  v.Bool(in, "RetainAllVariantProperties", "", false);
  v.Bool(in, "RetainDeploymentConfig", "", false);
  CARVE_RETURN_IF_ERROR(v.ToStatus());

  std::lock_guard lock(mu(s));
  CARVE_ASSIGN_OR_RETURN(store::Record rec, Get(s, req.account_id, kEndpoint, *name));
  CARVE_ASSIGN_OR_RETURN(EndpointRecord ep, EndpointRecord::FromRecord(rec));
  const std::string arn = Arn(s, req.account_id, kEndpoint, *name);
  if (ep.status != "InService") {
    return FailedPrecondition(
        fmt::format("Cannot update in-progress endpoint \"{}\" (status {}).", arn, ep.status));
  }
  CARVE_ASSIGN_OR_RETURN(store::Record cfg_rec,
                         Get(s, req.account_id, kEndpointConfig, *config_name));
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
    if (old.instance_type != now->instance_type || old.instance_count != now->instance_count) {
      return InvalidArgument(fmt::format(
          "Variant {} of endpoint {} runs {} x {}; endpoint configuration {} asks for {} x {}. "
          "carve keeps an endpoint's instances for its lifetime: create a new endpoint.",
          old.name, *name, old.instance_count, old.instance_type, *config_name, now->instance_count,
          now->instance_type));
    }
  }
  if (variants.size() != ep.variants.size()) {
    return InvalidArgument(fmt::format(
        "Endpoint configuration {} has {} variants; endpoint {} runs {}. carve keeps an "
        "endpoint's variants for its lifetime.",
        *config_name, variants.size(), *name, ep.variants.size()));
  }
  ep.config_name = *config_name;
  ep.status = "Updating";
  ep.status_since_ms = clock(s).UnixMillis();
  CARVE_RETURN_IF_ERROR(store(s).Update(rec.key, ep.ToJson().dump(), rec.version));
  Notify(s);
  return json{{"EndpointArn", arn}};
}

}  // namespace carve::server::sagemaker
