#include "runtime/copy_call.h"

#include <utility>

namespace carve::runtime {

namespace {
constexpr char kCustomAttributes[] = "X-Amzn-SageMaker-Custom-Attributes";
}  // namespace

http::ClientRequest ToClientRequest(const CopyRequest& request) {
  http::ClientRequest out;
  out.target = request.path;
  out.body = request.body;
  out.timeout = request.timeout;
  out.headers.emplace_back("Content-Type", request.content_type.empty() ? "application/octet-stream"
                                                                        : request.content_type);
  if (!request.accept.empty()) out.headers.emplace_back("Accept", request.accept);
  if (!request.custom_attributes.empty()) {
    out.headers.emplace_back(kCustomAttributes, request.custom_attributes);
  }
  return out;
}

CopyReply ToCopyReply(http::ClientReply reply) {
  CopyReply out;
  out.outcome = reply.outcome;
  out.status = reply.status;
  out.content_type = reply.Header("Content-Type");
  out.custom_attributes = reply.Header(kCustomAttributes);
  out.body = std::move(reply.body);
  out.detail = std::move(reply.detail);
  return out;
}

}  // namespace carve::runtime
