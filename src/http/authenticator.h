// Authenticator: who the caller of a request is (principals.h), and whether the route it asked
// for serves it. HttpServer asks it before any handler runs; it knows the ways a caller proves
// itself, and HttpServer knows only sockets, parsing, limits and routes.
//
//   - a SigV4 signature (aws/sigv4.h) with a key of the credentials file: a tenant of the key's
//     account, and an operator too when the key's section says carve_role = operator;
//   - on routes with endpoint_tokens (the OpenAI route), an endpoint's bearer token
//     (aws/bearer_token.h): a tenant, limited to that endpoint;
//   - on routes that serve scrapers, the scrape token as a bearer token;
//   - on the agent routes, a node credential as a bearer token (nodes/node_identity.h): a node,
//     with the node id it is bound to in NativeRequest::node_id; on POST /v1/agent/join, an
//     operator's bootstrap token: a joiner;
//   - nothing, on routes that serve anonymous callers.
// Refusals are 401 (a bearer token that is not one the server issues, or was revoked) or 403 (a
// bad or expired signature or token, or a principal the route does not serve, naming the route
// and whom it serves), in OpenAI's error shape on routes with endpoint_tokens and in the awsJson
// shape elsewhere.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "aws/credentials.h"
#include "aws/sigv4.h"
#include "common/clock.h"
#include "http/http_server.h"
#include "http/principals.h"

namespace carve::http {

class Authenticator {
 public:
  // `options`, `credentials` and `clock` must outlive it.
  Authenticator(const HttpServerOptions& options, const aws::Credentials& credentials,
                const Clock& clock);

  // A verified SigV4 caller: its account, and what it proved to be.
  struct Caller {
    std::string account_id;
    Principals principals;
  };

  // Verifies `request`'s SigV4 signature for `service`: the caller, or the 403 to send.
  // `request`'s headers and body are lent for the check and handed back.
  std::variant<Caller, NativeResponse> Authenticate(RawRequest& request,
                                                    std::string_view service = "sagemaker") const;

  // The caller of the route `what` ("GET /v1/nodes"), which serves `access`, into `out`
  // (account_id, caller, bearer_endpoint); or the refusal to send.
  std::optional<NativeResponse> Identify(const Access& access, const std::string& what,
                                         RawRequest& request, NativeRequest& out) const;

 private:
  std::optional<NativeResponse> AuthenticateBearer(std::string_view token,
                                                   NativeRequest& out) const;

  const HttpServerOptions& options_;
  const aws::Credentials& credentials_;
  const Clock& clock_;
  const aws::SigV4Verifier verifier_;
};

// A refusal in the awsJson error shape, with X-Amzn-Errortype.
NativeResponse Refusal(int status, const std::string& type, const std::string& message);
// An awsJson refusal in OpenAI's error shape, for the OpenAI-compatible route.
NativeResponse OpenAiDenied(const NativeResponse& aws);

}  // namespace carve::http
