// Replies of carve's native routes (/v1/...: agents, queues, fleet views): JSON bodies, and the
// one mapping from carve's error codes to HTTP statuses they all use. The AWS-compatible routes
// have their own wire errors (sagemaker/aws_error.h, runtime/runtime_error.h).
//
//   InvalidArgument 400 | NotFound 404 | AlreadyExists, FailedPrecondition, ResourceExhausted 409
//   Unavailable 503 (retry the same call) | Unimplemented 501 | Internal 500
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "http/http_server.h"

namespace carve::http {

int HttpStatusFor(ErrorCode code);
// `body` as JSON with the status: indented for people, or compact (indent -1) for machines
// (the agent protocol, where thousands of nodes poll).
NativeResponse JsonReply(int status, const nlohmann::json& body, int indent = 2);
// {"error": message, "code": "InvalidArgument"} with the status HttpStatusFor gives.
NativeResponse ErrorReply(const Error& error);
// 200 with the value's JSON, or the error's reply.
template <typename T, typename ToJson>
NativeResponse Answer(const Result<T>& r, int status, ToJson&& to_json) {
  if (!r.has_value()) return ErrorReply(r.error());
  return JsonReply(status, to_json(*r));
}
inline NativeResponse Answer(const Result<nlohmann::json>& r) {
  return Answer(r, 200, [](const nlohmann::json& j) { return j; });
}

}  // namespace carve::http
