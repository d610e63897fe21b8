#include "runtime/runtime_error.h"

#include <nlohmann/json.hpp>

#include "aws/event_stream.h"

namespace carve::runtime {

namespace es = carve::aws::eventstream;

RuntimeError ValidationError(std::string message) {
  return {400, "ValidationError", std::move(message), std::nullopt, std::nullopt};
}
RuntimeError ModelNotReady(std::string message) {
  return {429, "ModelNotReadyException", std::move(message), std::nullopt, std::nullopt};
}
RuntimeError ServiceUnavailable(std::string message) {
  return {503, "ServiceUnavailable", std::move(message), std::nullopt, std::nullopt};
}
RuntimeError InternalFailure(std::string message) {
  return {500, "InternalFailure", std::move(message), std::nullopt, std::nullopt};
}
RuntimeError ModelError(std::string message, std::optional<int> original_status,
                        std::optional<std::string> original_message) {
  return {424, "ModelError", std::move(message), original_status, std::move(original_message)};
}

RuntimeError FromError(const Error& error) {
  switch (error.code) {
    case ErrorCode::kNotFound:
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kFailedPrecondition:
    case ErrorCode::kAlreadyExists:
      return ValidationError(error.message);
    case ErrorCode::kUnavailable:
    case ErrorCode::kResourceExhausted:
      return ServiceUnavailable(error.message);
    case ErrorCode::kInternal:
    case ErrorCode::kUnimplemented:
      break;
  }
  return InternalFailure(error.message);
}

std::string CopyName(const RouteInfo& route) {
  return route.component.empty() ? "variant " + route.variant
                                 : "inference component " + route.component;
}

RuntimeError ModelErrorFor(const RouteInfo& route, const std::string& endpoint,
                           const CopyReply& reply) {
  if (reply.outcome == CopyOutcome::kOk) {
    const char* kind = reply.status >= 500 ? "server" : "client";
    return ModelError("Received " + std::string(kind) + " error (" + std::to_string(reply.status) +
                          ") from " + CopyName(route) + " of endpoint " + endpoint +
                          " with message \"" + reply.body + "\".",
                      reply.status, reply.body);
  }
  if (reply.outcome == CopyOutcome::kTimedOut) {
    return ModelError("Your invocation timed out while waiting for a response from " +
                          CopyName(route) + " of endpoint " + endpoint + " (timeout " +
                          std::to_string(route.timeout.count()) + " ms).",
                      std::nullopt, std::nullopt);
  }
  return ModelError("The connection to " + CopyName(route) + " of endpoint " + endpoint +
                        " closed before it answered (" + reply.detail + ").",
                    std::nullopt, std::nullopt);
}

http::NativeResponse ErrorResponse(const RuntimeError& error) {
  nlohmann::json body{{"Message", error.message}};
  if (error.original_status) body["OriginalStatusCode"] = *error.original_status;
  if (error.original_message) body["OriginalMessage"] = *error.original_message;
  http::NativeResponse out;
  out.http_status = error.http_status;
  // Invalid UTF-8 from a model's error text must not throw out of the handler.
  out.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.content_type = "application/json";
  out.headers.emplace_back("X-Amzn-ErrorType", error.type);
  return out;
}

std::string PayloadPartFrame(std::string_view bytes) {
  return es::Encode(es::Message{{{":event-type", "PayloadPart"},
                                 {":content-type", "application/octet-stream"},
                                 {":message-type", "event"}},
                                std::string(bytes)});
}

std::string ModelStreamErrorFrame(const std::string& message, const std::string& error_code) {
  nlohmann::json body{{"Message", message}, {"ErrorCode", error_code}};
  return es::Encode(
      es::Message{{{":exception-type", "ModelStreamError"},
                   {":content-type", "application/json"},
                   {":message-type", "exception"}},
                  body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
}

std::string InternalStreamFailureFrame(const std::string& message) {
  nlohmann::json body{{"Message", message}};
  return es::Encode(
      es::Message{{{":exception-type", "InternalStreamFailure"},
                   {":content-type", "application/json"},
                   {":message-type", "exception"}},
                  body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
}

}  // namespace carve::runtime
