// CreateEndpointConfig, DescribeEndpointConfig, DeleteEndpointConfig, ListEndpointConfigs.
// A variant's AcceleratorPartitionLayouts is validated here by the layout engine against the GPU
// of its InstanceType, so a layout that cannot be carved never reaches an endpoint.
#include <fmt/format.h>

#include "catalog/catalog.h"
#include "core/layout_validator.h"
#include "server/sagemaker/ops.h"
#include "server/sagemaker/variant.h"

namespace carve::server::sagemaker {
namespace {

// CreateEndpointConfig members carve does not implement (docs/api.md lists them).
constexpr UnsupportedMember kUnsupportedConfig[] = {
    {"DataCaptureConfig", "request and response capture is not implemented; omit it"},
    {"AsyncInferenceConfig", "asynchronous inference is not implemented; use InvokeEndpoint"},
    {"ExplainerConfig", "SageMaker Clarify explainers are not implemented; omit it"},
    {"ShadowProductionVariants", "shadow variants are not implemented; omit them"},
    {"VpcConfig", "copies run on their nodes' own network; there is no VPC to attach"},
    {"KmsKeyId", "carve does not encrypt instance volumes with a KMS key, and accepting a key "
                 "would claim encryption that does not happen; omit it"},
    {"MetricsConfig", "per-endpoint metrics settings are not implemented; carve's metrics are "
                      "always on at /metrics"},
    {"EnableNetworkIsolation", "copies can reach the network of their node; omit it or set false",
     false},
};

json Summary(const OpContext& ctx, const store::Record& r, const json&) {
  return {{"EndpointConfigName", r.key.name},
          {"EndpointConfigArn", ctx.Arn(r.key.account, kEndpointConfig, r.key.name)},
          {"CreationTime", EpochSeconds(r.created_ms)}};
}

}  // namespace

Result<json> CreateEndpointConfig(const OpContext& ctx, const http::ApiRequest& req,
                                  const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointConfigName", "", kEndpointNameRule, true);
  v.String(in, "ExecutionRoleArn", "", kRoleArnRule, false);
  v.Unsupported(in, kUnsupportedConfig, "");
  auto tags = ValidateTags(v, in, "Tags", "");
  const json* list = v.List(in, "ProductionVariants", "", 1, 10, true);
  std::vector<VariantSpec> variants;
  if (list != nullptr) {
    for (size_t i = 0; i < list->size(); ++i) {
      auto spec = ValidateVariant(v, (*list)[i], ElementPath("productionVariants", i));
      if (spec) variants.push_back(std::move(*spec));
    }
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  for (size_t i = 0; i < variants.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (variants[i].name == variants[j].name) {
        return InvalidArgument(fmt::format(
            "VariantName '{}' is used by more than one production variant; names must be "
            "unique within an endpoint configuration.",
            variants[i].name));
      }
    }
  }
  // A variant that names a model must name one that exists, as the service checks.
  for (const auto& var : variants) {
    if (!var.model_name.empty()) {
      CARVE_RETURN_IF_ERROR(ctx.Get(req.account_id, kModel, var.model_name));
    }
  }
  // Each layout is placed once, here, and the record keeps where every partition sits.
  json layouts = json::object();
  for (const auto& var : variants) {
    CARVE_ASSIGN_OR_RETURN(core::Layout layout, CheckVariantLayout(var));
    if (var.partition_types) layouts[var.name] = LayoutToJson(layout);
  }

  json body = in;
  body["Tags"] = tags.value_or(json::array());
  body[std::string(kCarveLayouts)] = layouts;
  CARVE_RETURN_IF_ERROR(ctx.CheckRoomFor(req.account_id, kEndpointConfig));
  auto rec = ctx.store().Create({req.account_id, std::string(kEndpointConfig), *name}, body.dump());
  if (!rec.has_value()) {
    if (rec.error().code == ErrorCode::kAlreadyExists) {
      return ctx.AlreadyExists(req.account_id, kEndpointConfig, *name);
    }
    return rec.error();
  }
  return json{{"EndpointConfigArn", ctx.Arn(req.account_id, kEndpointConfig, *name)}};
}

Result<json> DescribeEndpointConfig(const OpContext& ctx, const http::ApiRequest& req,
                                    const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointConfigName", "", kEndpointNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.Get(req.account_id, kEndpointConfig, *name));
  return EndpointConfigDescription(ctx, rec);
}

Result<json> EndpointConfigDescription(const OpContext& ctx, const store::Record& rec) {
  CARVE_ASSIGN_OR_RETURN(json body, Body(rec));
  body.erase("Tags");
  body.erase(std::string(kCarveLayouts));
  body["EndpointConfigArn"] = ctx.Arn(rec.key.account, kEndpointConfig, rec.key.name);
  body["CreationTime"] = EpochSeconds(rec.created_ms);
  return body;
}

Result<json> DeleteEndpointConfig(const OpContext& ctx, const http::ApiRequest& req,
                                  const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointConfigName", "", kEndpointNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  // Endpoints copy their variants when created, so deleting a config in use is allowed, as on
  // the real service.
  Status st = ctx.store().Delete({req.account_id, std::string(kEndpointConfig), *name});
  if (!st.ok() && st.error().code == ErrorCode::kNotFound) {
    return ctx.Get(req.account_id, kEndpointConfig, *name).error();
  }
  CARVE_RETURN_IF_ERROR(st);
  return json::object();
}

Result<json> ListEndpointConfigs(const OpContext& ctx, const http::ApiRequest& req,
                                 const json& in) {
  static const ListSpec spec{kEndpointConfig, "EndpointConfigs", "", false, {}, &Summary, {},
                             nullptr};
  return ListResources(ctx, req, in, spec);
}

}  // namespace carve::server::sagemaker
