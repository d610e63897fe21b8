#include "server/sagemaker/aws_error.h"

namespace carve::server::sagemaker {
namespace {

struct AwsCode {
  int http_status;
  std::string_view type;
};

AwsCode CodeFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
    case ErrorCode::kAlreadyExists:
      return {400, "ValidationException"};
    case ErrorCode::kResourceExhausted:
      return {400, "ResourceLimitExceeded"};
    case ErrorCode::kFailedPrecondition:
      return {400, "ResourceInUse"};
    case ErrorCode::kUnimplemented:
      return {400, "UnknownOperationException"};
    case ErrorCode::kUnavailable:
      return {503, "ServiceUnavailable"};
    case ErrorCode::kInternal:
      return {500, "InternalFailure"};
  }
  return {500, "InternalFailure"};
}

}  // namespace

ApiResponse ToAwsError(const Error& error) {
  AwsCode c = CodeFor(error.code);
  ApiResponse r;
  r.http_status = c.http_status;
  r.error_type = std::string(c.type);
  // A message may quote the caller's raw bytes (a body that is not JSON): never let them throw.
  r.body = nlohmann::json{{"__type", c.type}, {"message", error.message}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

ApiResponse JsonOk(const nlohmann::json& body) {
  ApiResponse r;
  r.http_status = 200;
  r.body = body.is_null() ? "{}" : body.dump();
  return r;
}

}  // namespace carve::server::sagemaker
