#include "app/scalable_resources.h"

namespace carve::app {

using nlohmann::json;
using server::autoscaling::ScalableKey;

Result<json> SageMakerScalableResources::Call(const std::string& account, const std::string& op,
                                              const json& body) {
  http::ApiResponse r = sagemaker_.Handle({op, body.dump(), account, "autoscaling"});
  json out = json::parse(r.body, nullptr, false);
  if (r.http_status == 200) return out;
  const std::string message = out.is_object() ? out.value("message", r.body) : r.body;
  if (message.find("Could not find") != std::string::npos) return NotFound(message);
  return InvalidArgument(message);
}

Result<SageMakerScalableResources::Capacity> SageMakerScalableResources::Get(
    const std::string& account, const ScalableKey& key) {
  Capacity c;
  if (key.IsComponent()) {
    CARVE_ASSIGN_OR_RETURN(json d, Call(account, "DescribeInferenceComponent",
                                        {{"InferenceComponentName", key.Component()}}));
    c.desired = d["RuntimeConfig"].value("DesiredCopyCount", 0);
    c.current = d["RuntimeConfig"].value("CurrentCopyCount", 0);
    c.endpoint = d.value("EndpointName", "");
    c.status_message = d.value("StatusMessage", "");
    return c;
  }
  CARVE_ASSIGN_OR_RETURN(json d,
                         Call(account, "DescribeEndpoint", {{"EndpointName", key.Endpoint()}}));
  for (const auto& v : d.value("ProductionVariants", json::array())) {
    if (v.value("VariantName", "") != key.Variant()) continue;
    c.desired = v.value("DesiredInstanceCount", 0);
    c.current = v.value("CurrentInstanceCount", 0);
    c.endpoint = key.Endpoint();
    c.status_message = d.value("FailureReason", "");
    return c;
  }
  return NotFound("Could not find variant " + key.Variant() + " of endpoint " + key.Endpoint());
}

Status SageMakerScalableResources::Set(const std::string& account, const ScalableKey& key,
                                       int desired) {
  if (key.IsComponent()) {
    CARVE_RETURN_IF_ERROR(Call(account, "UpdateInferenceComponentRuntimeConfig",
                               {{"InferenceComponentName", key.Component()},
                                {"DesiredRuntimeConfig", {{"CopyCount", desired}}}}));
    return OkStatus();
  }
  CARVE_RETURN_IF_ERROR(
      Call(account, "UpdateEndpointWeightsAndCapacities",
           {{"EndpointName", key.Endpoint()},
            {"DesiredWeightsAndCapacities",
             {{{"VariantName", key.Variant()}, {"DesiredInstanceCount", desired}}}}}));
  return OkStatus();
}

}  // namespace carve::app
