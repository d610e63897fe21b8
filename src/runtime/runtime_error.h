// The SageMaker runtime's error responses (awsRestJson1): the code in the X-Amzn-ErrorType
// header, the members in a JSON body ({"Message": ...} plus the shape's own members), and the
// HTTP status botocore's sagemaker-runtime model attaches to each code, so that boto3 raises
// client.exceptions.<Code>:
//   ValidationError 400, ModelError 424 (+OriginalStatusCode, OriginalMessage),
//   ModelNotReadyException 429, InternalFailure 500, ServiceUnavailable 503.
// And the two in-stream exceptions of InvokeEndpointWithResponseStream as event-stream frames.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "http/http_server.h"
#include "runtime/copy_call.h"
#include "runtime/copy_directory.h"

namespace carve::runtime {

struct RuntimeError {
  int http_status = 500;
  std::string type = "InternalFailure";
  std::string message;
  std::optional<int> original_status;           // ModelError only.
  std::optional<std::string> original_message;  // ModelError only.
};

RuntimeError ValidationError(std::string message);
RuntimeError ModelNotReady(std::string message);
RuntimeError ServiceUnavailable(std::string message);
RuntimeError InternalFailure(std::string message);
RuntimeError ModelError(std::string message, std::optional<int> original_status,
                        std::optional<std::string> original_message);

// The one mapping from carve error codes to runtime errors: NotFound, InvalidArgument and
// FailedPrecondition are the caller's to fix (ValidationError); Unavailable and
// ResourceExhausted are transient (ServiceUnavailable); anything else is InternalFailure.
RuntimeError FromError(const Error& error);

// "inference component NAME", or "variant NAME" for an endpoint without components.
std::string CopyName(const RouteInfo& route);
// The ModelError for a copy that answered non-2xx (kOk with that status), timed out or broke off.
RuntimeError ModelErrorFor(const RouteInfo& route, const std::string& endpoint,
                           const CopyReply& reply);

http::NativeResponse ErrorResponse(const RuntimeError& error);

// Event-stream frames of the response stream.
std::string PayloadPartFrame(std::string_view bytes);
// `error_code` is ModelStreamError's ErrorCode member (e.g. "StreamBroken",
// "ModelInvocationTimeExceeded").
std::string ModelStreamErrorFrame(const std::string& message, const std::string& error_code);
std::string InternalStreamFailureFrame(const std::string& message);

}  // namespace carve::runtime
