// The one place where carve's ErrorCode becomes an AWS error on the wire, plus the success
// response builder. Every SageMaker handler returns through these.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/result.h"
#include "server/api.h"

namespace carve::server::sagemaker {

// Maps an Error to the awsJson1_1 error response:
//   InvalidArgument, NotFound, AlreadyExists -> 400 ValidationException (the real service answers
//       "not found" with ValidationException; the CLI's endpoint-deleted waiter depends on it)
//   ResourceExhausted  -> 400 ResourceLimitExceeded
//   FailedPrecondition -> 400 ResourceInUse
//   Unimplemented      -> 400 UnknownOperationException
//   Unavailable        -> 503 ServiceUnavailable (transient; clients retry)
//   Internal           -> 500 InternalFailure
// Deterministic failures never map to 5xx, because botocore retries those.
ApiResponse ToAwsError(const Error& error);

// HTTP 200 with the JSON body.
ApiResponse JsonOk(const nlohmann::json& body);

}  // namespace carve::server::sagemaker
