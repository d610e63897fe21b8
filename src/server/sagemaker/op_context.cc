#include "server/sagemaker/op_context.h"

#include <map>

#include "server/sagemaker/ops.h"
#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {

std::string OpContext::Arn(std::string_view account, std::string_view kind,
                           std::string_view name) const {
  return MakeArn(region_, account, kind, name);
}

Result<store::Record> OpContext::Get(const std::string& account, std::string_view kind,
                                     const std::string& name) const {
  auto rec = store_.Get({account, std::string(kind), name});
  if (!rec.has_value() && rec.error().code == ErrorCode::kNotFound) {
    return NotFound("Could not find " + std::string(HumanName(kind)) + " \"" +
                    Arn(account, kind, name) + "\".");
  }
  return rec;
}

Error OpContext::AlreadyExists(std::string_view account, std::string_view kind,
                               std::string_view name) const {
  return carve::AlreadyExists("Cannot create already existing " + std::string(HumanName(kind)) +
                              " \"" + Arn(account, kind, name) + "\".");
}

Status OpContext::CheckRoomFor(const std::string& account, std::string_view kind) const {
  store::ListOptions options;
  options.limit = max_records_per_kind_;
  CARVE_ASSIGN_OR_RETURN(auto held, store_.List(account, std::string(kind), options));
  if (static_cast<int>(held.size()) < max_records_per_kind_) return OkStatus();
  return ResourceExhausted(
      "account " + account + " already holds " + std::to_string(max_records_per_kind_) + " " +
      std::string(HumanName(kind)) + " records, the most one account may hold; delete some first");
}

Result<json> Body(const store::Record& record) {
  try {
    return json::parse(record.body);
  } catch (const json::exception& e) {
    return Internal("stored " + record.key.kind + " '" + record.key.name +
                    "' is not valid JSON: " + e.what());
  }
}

Handler FindHandler(std::string_view op) {
  static const std::map<std::string_view, Handler> kOps = {
      {"CreateModel", &CreateModel},
      {"DescribeModel", &DescribeModel},
      {"DeleteModel", &DeleteModel},
      {"ListModels", &ListModels},
      {"CreateEndpointConfig", &CreateEndpointConfig},
      {"DescribeEndpointConfig", &DescribeEndpointConfig},
      {"DeleteEndpointConfig", &DeleteEndpointConfig},
      {"ListEndpointConfigs", &ListEndpointConfigs},
      {"CreateEndpoint", &CreateEndpoint},
      {"DescribeEndpoint", &DescribeEndpoint},
      {"DeleteEndpoint", &DeleteEndpoint},
      {"ListEndpoints", &ListEndpoints},
      {"UpdateEndpoint", &UpdateEndpoint},
      {"UpdateEndpointWeightsAndCapacities", &UpdateEndpointWeightsAndCapacities},
      {"CreateInferenceComponent", &CreateInferenceComponent},
      {"DescribeInferenceComponent", &DescribeInferenceComponent},
      {"DeleteInferenceComponent", &DeleteInferenceComponent},
      {"ListInferenceComponents", &ListInferenceComponents},
      {"UpdateInferenceComponent", &UpdateInferenceComponent},
      {"UpdateInferenceComponentRuntimeConfig", &UpdateInferenceComponentRuntimeConfig},
      {"AddTags", &AddTags},
      {"ListTags", &ListTags},
      {"DeleteTags", &DeleteTags},
  };
  auto it = kOps.find(op);
  return it == kOps.end() ? nullptr : it->second;
}

}  // namespace carve::server::sagemaker
