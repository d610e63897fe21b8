// The one place where carve's ErrorCode becomes a SageMaker error on the wire, plus the success
// response builder. Every SageMaker handler returns through these.
//
// The table (SageMakerErrorTable, and docs/api.md "Errors", which lists the same rows) says, for
// each refusal kind, the error code and HTTP status SageMaker sends and where that is written:
//   InvalidArgument, NotFound, AlreadyExists, FailedPrecondition -> 400 ValidationException
//   ResourceExhausted  -> 400 ResourceLimitExceeded, on the operations whose botocore model
//                         lists it; ValidationException on the others
//   Unimplemented      -> 400 UnknownOperationException
//   Unavailable        -> 503 ServiceUnavailable (transient; clients retry)
//   Internal           -> 500 InternalFailure
// Deterministic failures never map to 5xx, because botocore retries those.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string_view>

#include "common/result.h"
#include "http/api.h"

namespace carve::server::sagemaker {

struct AwsErrorRow {
  ErrorCode kind;
  int http_status;
  std::string_view code;
  std::string_view source;  // where AWS says so
};

// One row per ErrorCode.
std::span<const AwsErrorRow> SageMakerErrorTable();

// The operations whose botocore model lists ResourceLimitExceeded.
bool ListsResourceLimitExceeded(std::string_view operation);

// Maps an Error of `operation` (its X-Amz-Target action, "" when unknown) to the awsJson1_1
// error response, by the table above.
http::ApiResponse ToAwsError(const Error& error, std::string_view operation = "");

// HTTP 200 with the JSON body.
http::ApiResponse JsonOk(const nlohmann::json& body);

}  // namespace carve::server::sagemaker
