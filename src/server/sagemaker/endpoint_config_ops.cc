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

using Ops = SageMakerService::Ops;

json Summary(const SageMakerService& s, const store::Record& r, const json&) {
  return {{"EndpointConfigName", r.key.name},
          {"EndpointConfigArn", Ops::Arn(s, r.key.account, kEndpointConfig, r.key.name)},
          {"CreationTime", EpochSeconds(r.created_ms)}};
}

}  // namespace

Result<json> Ops::CreateEndpointConfig(SageMakerService& s, const ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointConfigName", "", kEndpointNameRule, true);
  v.String(in, "ExecutionRoleArn", "", kRoleArnRule, false);
  v.String(in, "KmsKeyId", "", LengthRule(0, 2048), false);
  v.Bool(in, "EnableNetworkIsolation", "", false);
  auto tags = ValidateTags(v, in, "Tags", "");
  const json* list = v.List(in, "ProductionVariants", "", 1, 10, true);
  v.List(in, "ShadowProductionVariants", "", 1, 10, false);
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
  for (const auto& var : variants) CARVE_RETURN_IF_ERROR(CheckVariantLayout(var));

  json body = in;
  body["Tags"] = tags.value_or(json::array());
  auto rec = store(s).Create({req.account_id, std::string(kEndpointConfig), *name}, body.dump());
  if (!rec.has_value()) {
    if (rec.error().code == ErrorCode::kAlreadyExists) {
      return AlreadyExistsError(s, req.account_id, kEndpointConfig, *name);
    }
    return rec.error();
  }
  return json{{"EndpointConfigArn", Arn(s, req.account_id, kEndpointConfig, *name)}};
}

Result<json> Ops::DescribeEndpointConfig(SageMakerService& s, const ApiRequest& req,
                                         const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointConfigName", "", kEndpointNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, Get(s, req.account_id, kEndpointConfig, *name));
  CARVE_ASSIGN_OR_RETURN(json body, Body(rec));
  body.erase("Tags");
  body["EndpointConfigArn"] = Arn(s, req.account_id, kEndpointConfig, *name);
  body["CreationTime"] = EpochSeconds(rec.created_ms);
  return body;
}

Result<json> Ops::DeleteEndpointConfig(SageMakerService& s, const ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "EndpointConfigName", "", kEndpointNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  // Endpoints copy their variants when created, so deleting a config in use is allowed, as on
  // the real service.
  Status st = store(s).Delete({req.account_id, std::string(kEndpointConfig), *name});
  if (!st.ok() && st.error().code == ErrorCode::kNotFound) {
    return Get(s, req.account_id, kEndpointConfig, *name).error();
  }
  CARVE_RETURN_IF_ERROR(st);
  return json::object();
}

Result<json> Ops::ListEndpointConfigs(SageMakerService& s, const ApiRequest& req, const json& in) {
  static const ListSpec spec{kEndpointConfig, "EndpointConfigs", "", false, {}, &Summary, {},
                             nullptr};
  return ListResources(s, req, in, spec);
}

}  // namespace carve::server::sagemaker
