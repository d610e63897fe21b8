#include "server/sagemaker/aws_error.h"

#include <algorithm>
#include <array>

namespace carve::server::sagemaker {
namespace {

// Sources: the SageMaker API Reference's "Common Errors" page (the codes every action may
// answer, with their HTTP status), botocore's service model sagemaker/2017-07-24 (the errors
// each operation lists), and botocore's waiters for sagemaker (what the stock CLI matches on).
constexpr std::array<AwsErrorRow, 8> kTable{{
    {ErrorCode::kInvalidArgument, 400, "ValidationException",
     "Common Errors: ValidationException, 400, the input fails to satisfy the constraints"},
    {ErrorCode::kNotFound, 400, "ValidationException",
     "SageMaker answers Describe/Delete/Update of a missing endpoint, config, model or component "
     "with ValidationException \"Could not find ...\"; botocore's endpoint_deleted waiter "
     "matches that code as success"},
    {ErrorCode::kAlreadyExists, 400, "ValidationException",
     "SageMaker answers Create* of an existing name with ValidationException "
     "\"Cannot create already existing ...\"; no operation carve serves lists ResourceInUse"},
    {ErrorCode::kFailedPrecondition, 400, "ValidationException",
     "SageMaker answers an operation on an endpoint in the wrong state with ValidationException "
     "\"Cannot update in-progress endpoint ...\"; botocore's model lists ResourceInUse for none "
     "of the endpoint, endpoint-config, model or inference-component operations"},
    {ErrorCode::kResourceExhausted, 400, "ResourceLimitExceeded",
     "botocore's model: ResourceLimitExceeded (400) on CreateModel, CreateEndpointConfig, "
     "CreateEndpoint, UpdateEndpoint, UpdateEndpointWeightsAndCapacities, "
     "CreateInferenceComponent, UpdateInferenceComponent, "
     "UpdateInferenceComponentRuntimeConfig; ValidationException elsewhere"},
    {ErrorCode::kUnimplemented, 400, "UnknownOperationException",
     "awsJson1_1: an X-Amz-Target the service does not have"},
    {ErrorCode::kUnavailable, 503, "ServiceUnavailable",
     "Common Errors: ServiceUnavailable, 503, the request failed due to a temporary failure"},
    {ErrorCode::kInternal, 500, "InternalFailure",
     "Common Errors: InternalFailure, 500, an unknown error, exception or failure"},
}};

constexpr std::array<std::string_view, 8> kLimitOperations{
    "CreateModel",
    "CreateEndpointConfig",
    "CreateEndpoint",
    "UpdateEndpoint",
    "UpdateEndpointWeightsAndCapacities",
    "CreateInferenceComponent",
    "UpdateInferenceComponent",
    "UpdateInferenceComponentRuntimeConfig",
};

}  // namespace

std::span<const AwsErrorRow> SageMakerErrorTable() { return kTable; }

bool ListsResourceLimitExceeded(std::string_view operation) {
  return std::ranges::find(kLimitOperations, operation) != kLimitOperations.end();
}

http::ApiResponse ToAwsError(const Error& error, std::string_view operation) {
  const auto row = std::ranges::find(kTable, error.code, &AwsErrorRow::kind);
  int status = row == kTable.end() ? 500 : row->http_status;
  std::string_view code = row == kTable.end() ? "InternalFailure" : row->code;
  if (error.code == ErrorCode::kResourceExhausted && !operation.empty() &&
      !ListsResourceLimitExceeded(operation)) {
    code = "ValidationException";  // An operation that cannot answer it on AWS.
  }
  http::ApiResponse r;
  r.http_status = status;
  r.error_type = std::string(code);
  // A message may quote the caller's raw bytes (a body that is not JSON): never let them throw.
  r.body = nlohmann::json{{"__type", code}, {"message", error.message}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

http::ApiResponse JsonOk(const nlohmann::json& body) {
  http::ApiResponse r;
  r.http_status = 200;
  r.body = body.is_null() ? "{}" : body.dump();
  return r;
}

}  // namespace carve::server::sagemaker
