// The route that revokes one endpoint bearer token (`carve token revoke`, docs/api.md):
//
//   POST /v1/tokens/revoke   {"token": "<the token>"}   (tenants, SigV4)
//     200 {"revoked": true, "token_id", "endpoint", "expires_at"}: the token is refused from the
//         next request on, on the OpenAI-compatible route, with 401;
//     200 {"revoked": false, "expired": "The bearer token expired at ..."}: nothing to revoke, it
//         is refused as expired already;
//     400 ValidationException: no token, or bytes that do not verify as one of this server's
//         tokens (the reason, as the OpenAI route would give it);
//     403 AccessDeniedException: a token minted with a key of another account. Only the token's
//         own account may revoke it, and the answer does not say whose it is.
// The token's signature and account are verified before anything is written.
#pragma once

#include <string>

#include "aws/credentials.h"
#include "common/clock.h"
#include "http/http_server.h"
#include "runtime/bearer_revocations.h"

namespace carve::runtime {

struct TokenRouteOptions {
  const aws::Credentials* credentials = nullptr;  // Must outlive the server.
  const Clock* clock = nullptr;                   // nullptr: SystemClock.
  // What the server's bearer tokens are scoped to (HttpServerOptions' signing_service, region).
  std::string service = "sagemaker";
  std::string region = "us-east-1";
};

// Adds POST /v1/tokens/revoke to `http` (before it starts); `revocations` must outlive it.
void RegisterTokenRoutes(http::HttpServer& server, BearerRevocations& revocations,
                         TokenRouteOptions options);

}  // namespace carve::runtime
