// The seam between the HTTP front end and the SageMaker control-plane service.
//
// The front end (http_server) verifies SigV4, resolves the account, assigns a request id, and
// hands the service one ApiRequest per `POST /` with `X-Amz-Target: SageMaker.<Operation>`.
// The service answers with an ApiResponse the front end writes back verbatim.
#pragma once

#include <string>

namespace carve::http {

struct ApiRequest {
  std::string operation;   // "CreateEndpoint" (the part after "SageMaker.").
  std::string body;        // JSON 1.1 body as received ("{}" when empty).
  std::string account_id;  // From the verified access key.
  std::string request_id;  // Echoed as x-amzn-RequestId.
};

struct ApiResponse {
  int http_status = 200;
  std::string body;        // JSON text.
  std::string error_type;  // Set on errors: goes to X-Amzn-Errortype and "__type".
};

}  // namespace carve::http
