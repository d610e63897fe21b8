// Internal to the SageMaker service: the operation handlers (one .cc per resource) and the
// helpers they share. Each handler takes the validated-JSON request body and returns the
// response body or an Error that aws_error.h maps to the wire.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/sagemaker/resources.h"
#include "server/sagemaker/service.h"
#include "store/store.h"

namespace carve::server::sagemaker {

using nlohmann::json;

class SageMakerService::Ops {
 public:
  using Handler = Result<json> (*)(SageMakerService&, const ApiRequest&, const json&);
  // nullptr for an operation this service does not implement.
  static Handler Find(std::string_view operation);

  // model_ops.cc
  static Result<json> CreateModel(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> DescribeModel(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> DeleteModel(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> ListModels(SageMakerService&, const ApiRequest&, const json&);
  // endpoint_config_ops.cc
  static Result<json> CreateEndpointConfig(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> DescribeEndpointConfig(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> DeleteEndpointConfig(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> ListEndpointConfigs(SageMakerService&, const ApiRequest&, const json&);
  // endpoint_ops.cc
  static Result<json> CreateEndpoint(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> DescribeEndpoint(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> DeleteEndpoint(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> ListEndpoints(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> UpdateEndpoint(SageMakerService&, const ApiRequest&, const json&);
  // component_ops.cc
  static Result<json> CreateInferenceComponent(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> DescribeInferenceComponent(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> DeleteInferenceComponent(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> ListInferenceComponents(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> UpdateInferenceComponent(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> UpdateInferenceComponentRuntimeConfig(SageMakerService&, const ApiRequest&,
                                                            const json&);
  // tag_ops.cc
  static Result<json> AddTags(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> ListTags(SageMakerService&, const ApiRequest&, const json&);
  static Result<json> DeleteTags(SageMakerService&, const ApiRequest&, const json&);

  // reconcile.cc: one pass over endpoints and components. Requires s.mu_ held.
  static void ReconcileEndpoints(SageMakerService& s);
  static void ReconcileComponents(SageMakerService& s);
  static Status RecoverLocked(SageMakerService& s);
  // Agent mode: fleet nodes and readiness from the registry; then, after placement, each node's
  // desired GPU layouts and copy workloads, and the route table.
  static void SyncNodes(SageMakerService& s);
  static void PublishWorkloads(SageMakerService& s);

  // Shared helpers (service.cc).
  static std::string Arn(const SageMakerService& s, std::string_view account, std::string_view kind,
                         std::string_view name);
  // The record, or NotFound worded as the service does: Could not find endpoint "arn:...".
  static Result<store::Record> Get(SageMakerService& s, const std::string& account,
                                   std::string_view kind, const std::string& name);
  static Error AlreadyExistsError(const SageMakerService& s, std::string_view account,
                                  std::string_view kind, std::string_view name);
  static Result<json> Body(const store::Record& record);
  static const Clock& clock(const SageMakerService& s) { return s.clock_; }
  static store::Store& store(SageMakerService& s) { return s.store_; }
  static fleet::Fleet& fleet(SageMakerService& s) { return s.fleet_; }
  static std::mutex& mu(SageMakerService& s) { return s.mu_; }
  static void Notify(SageMakerService& s) { s.Notify(); }
  static nodes::NodeRegistry* registry(SageMakerService& s) { return s.options_.registry; }
};

// list_ops.cc: filtering, sorting and paging shared by the four List operations.
struct ListSpec {
  std::string_view kind;
  std::string_view result_member;  // "Endpoints".
  std::string_view status_member;  // "EndpointStatus"; "" when the kind has no status.
  bool has_last_modified = false;  // LastModifiedTime{Before,After} are modeled.
  std::span<const std::string_view> status_values;
  // Builds one summary from a record and its parsed body.
  json (*summary)(const SageMakerService&, const store::Record&, const json& body);
  // Extra equality filters: (request member, body member), e.g. ("EndpointNameEquals",
  // "EndpointName").
  std::vector<std::pair<std::string_view, std::string_view>> equals;
  const StringRule* equals_rule = nullptr;
};
Result<json> ListResources(SageMakerService& s, const ApiRequest& req, const json& in,
                           const ListSpec& spec);

}  // namespace carve::server::sagemaker
