// The SageMaker operation handlers, one .cc per resource. Each takes the validated-JSON request
// body and returns the response body, or an Error that aws_error.h maps to the wire. Handlers
// only validate and record what is wanted; the reconciler's parts do the work.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/utf8.h"
#include "http/api.h"
#include "server/sagemaker/op_context.h"
#include "server/sagemaker/resources.h"
#include "store/store.h"

namespace carve::server::sagemaker {

using nlohmann::json;

// The most characters SageMaker's models allow a FailureReason, a VariantStatus StatusMessage
// and an inference component's StatusMessage; Describe answers cut longer text with FitUtf8.
inline constexpr size_t kMaxMessage = 1024;

using Handler = Result<json> (*)(const OpContext&, const http::ApiRequest&, const json&);
// nullptr for an operation this service does not implement.
Handler FindHandler(std::string_view operation);

// model_ops.cc
// Records violations of the launch rules (protocol/launch_inputs.h) in a container definition at
// `path`: Image an OCI reference, the model data member (`url_member`: ModelDataUrl, or a
// component's ArtifactUrl) inside the model roots when it is a file:// or path, Environment
// within SageMaker's limits and free of reserved names. Messages name the member and the rule.
void ValidateLaunchInputs(Validator& v, const OpContext& ctx, const json& container,
                          const std::string& path, std::string_view url_member);
Result<json> CreateModel(const OpContext&, const http::ApiRequest&, const json&);
Result<json> DescribeModel(const OpContext&, const http::ApiRequest&, const json&);
Result<json> DeleteModel(const OpContext&, const http::ApiRequest&, const json&);
Result<json> ListModels(const OpContext&, const http::ApiRequest&, const json&);
// endpoint_config_ops.cc
Result<json> CreateEndpointConfig(const OpContext&, const http::ApiRequest&, const json&);
Result<json> DescribeEndpointConfig(const OpContext&, const http::ApiRequest&, const json&);
// DescribeEndpointConfig's answer for a stored endpoint configuration.
Result<json> EndpointConfigDescription(const OpContext&, const store::Record&);
Result<json> DeleteEndpointConfig(const OpContext&, const http::ApiRequest&, const json&);
Result<json> ListEndpointConfigs(const OpContext&, const http::ApiRequest&, const json&);
// endpoint_ops.cc
Result<json> CreateEndpoint(const OpContext&, const http::ApiRequest&, const json&);
Result<json> DescribeEndpoint(const OpContext&, const http::ApiRequest&, const json&);
// DescribeEndpoint's answer for a stored endpoint.
Result<json> EndpointDescription(const OpContext&, const store::Record&);
Result<json> DeleteEndpoint(const OpContext&, const http::ApiRequest&, const json&);
Result<json> ListEndpoints(const OpContext&, const http::ApiRequest&, const json&);
Result<json> UpdateEndpoint(const OpContext&, const http::ApiRequest&, const json&);
Result<json> UpdateEndpointWeightsAndCapacities(const OpContext&, const http::ApiRequest&,
                                                const json&);
// component_ops.cc
Result<json> CreateInferenceComponent(const OpContext&, const http::ApiRequest&, const json&);
Result<json> DescribeInferenceComponent(const OpContext&, const http::ApiRequest&, const json&);
// DescribeInferenceComponent's answer for a stored inference component.
Result<json> ComponentDescription(const OpContext&, const store::Record&);
Result<json> DeleteInferenceComponent(const OpContext&, const http::ApiRequest&, const json&);
Result<json> ListInferenceComponents(const OpContext&, const http::ApiRequest&, const json&);
Result<json> UpdateInferenceComponent(const OpContext&, const http::ApiRequest&, const json&);
Result<json> UpdateInferenceComponentRuntimeConfig(const OpContext&, const http::ApiRequest&,
                                                   const json&);
// tag_ops.cc
Result<json> AddTags(const OpContext&, const http::ApiRequest&, const json&);
Result<json> ListTags(const OpContext&, const http::ApiRequest&, const json&);
Result<json> DeleteTags(const OpContext&, const http::ApiRequest&, const json&);

// A stored body as JSON; Internal when it is not (stored data is ours, never the user's).
Result<json> Body(const store::Record& record);

// list_ops.cc: filtering, sorting and paging shared by the four List operations.
struct ListSpec {
  std::string_view kind;
  std::string_view result_member;  // "Endpoints".
  std::string_view status_member;  // "EndpointStatus"; "" when the kind has no status.
  bool has_last_modified = false;  // LastModifiedTime{Before,After} are modeled.
  std::span<const std::string_view> status_values;
  // Builds one summary from a record and its parsed body.
  json (*summary)(const OpContext&, const store::Record&, const json& body);
  // Extra equality filters: (request member, body member), e.g. ("EndpointNameEquals",
  // "EndpointName").
  std::vector<std::pair<std::string_view, std::string_view>> equals;
  const StringRule* equals_rule = nullptr;
};
Result<json> ListResources(const OpContext& ctx, const http::ApiRequest& req, const json& in,
                           const ListSpec& spec);

}  // namespace carve::server::sagemaker
