#include "http/native_reply.h"

namespace carve::http {

int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kAlreadyExists:
    case ErrorCode::kFailedPrecondition:
    case ErrorCode::kResourceExhausted:
      return 409;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kUnimplemented:
      return 501;
    case ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

NativeResponse JsonReply(int status, const nlohmann::json& body, int indent) {
  NativeResponse r;
  r.http_status = status;
  // Messages may quote a caller's bytes (a path segment): invalid UTF-8 must not throw.
  r.body = body.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return r;
}

NativeResponse ErrorReply(const Error& error) {
  return JsonReply(HttpStatusFor(error.code),
                   {{"error", error.message}, {"code", std::string(ErrorCodeName(error.code))}});
}

}  // namespace carve::http
