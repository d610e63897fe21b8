// One call to a model copy (`POST /invocations` on "host:port"), as the router sees it: the
// SageMaker headers it forwards and the ones it reads back. The transport is http::HttpClient
// (http/http_client.h): its pool, its deadlines and its outcomes, which CopyOutcome names.
#pragma once

#include <chrono>
#include <string>

#include "http/http_client.h"

namespace carve::runtime {

// kConnectFailed: nothing was sent; kTimedOut; kBroken: failed after the request went out;
// kAborted: the router stopped reading (its client went away); kOk: a whole answer, any status.
using CopyOutcome = http::ClientOutcome;
inline std::string_view CopyOutcomeName(CopyOutcome outcome) {
  return http::ClientOutcomeName(outcome);
}

struct CopyRequest {
  std::string path = "/invocations";
  std::string body;
  std::string content_type;       // Sent as Content-Type (application/octet-stream when empty).
  std::string accept;             // Sent as Accept when non-empty.
  std::string custom_attributes;  // X-Amzn-SageMaker-Custom-Attributes when non-empty.
  std::chrono::milliseconds timeout{60000};
};

struct CopyReply {
  CopyOutcome outcome = CopyOutcome::kOk;
  int status = 0;    // HTTP status when headers arrived, else 0.
  std::string body;  // Whole body (unary), or the body of a non-2xx answer (streamed).
  std::string content_type;
  std::string custom_attributes;
  std::string detail;  // What failed, for messages ("Connection refused").
};

http::ClientRequest ToClientRequest(const CopyRequest& request);
CopyReply ToCopyReply(http::ClientReply reply);

}  // namespace carve::runtime
