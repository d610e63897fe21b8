// SignedClient: carve's own HTTP client for its native JSON routes and the agent protocol. Every
// request is SigV4-signed (service "sagemaker") with a key from an AWS shared-credentials file,
// exactly as the aws CLI would sign it, or carries a node agent's bearer credential.
//
// Thread-safe: each call opens its own connection (agent and CLI traffic is a few calls a
// second; the load generator has its own pooled clients).
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "protocol/server_trust.h"

namespace carve::protocol {

struct ClientCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string region = "us-east-1";
  // When set, requests carry `Authorization: Bearer <bearer_token>` instead of a signature: a
  // node agent's node credential, or a bootstrap token on POST /v1/agent/join.
  std::string bearer_token{};
};

// The region carve's own clients sign for unless told another: $AWS_REGION, else
// $AWS_DEFAULT_REGION (the order of the aws CLI v2 and the AWS SDKs), else "us-east-1", the
// server's default. A server refuses a signature scoped to any region but its own
// (`carve server --region`).
std::string DefaultRegion();

// Reads `profile` from an AWS shared-credentials file (the file `carve server` writes), with
// DefaultRegion() as its region. NotFound when the file or the profile is missing;
// InvalidArgument naming the line otherwise.
Result<ClientCredentials> LoadClientCredentials(const std::string& path,
                                                const std::string& profile = "default");

struct HttpReply {
  int status = 0;
  std::string body;
  std::multimap<std::string, std::string> headers;
};

// A reply to a JSON route, as SignedClient::Json reads it: a 2xx body parsed, anything else an
// error with the code its status maps to (see Json). `path` names the request in errors.
Result<nlohmann::json> ParseJsonReply(std::string_view path, const HttpReply& reply);

class SignedClient {
 public:
  // `base_url`: "http://host:port" or "https://host:port" (no path). An empty access key sends
  // unsigned requests (for servers run with --insecure-no-auth). `trust` says which server an
  // https:// URL must be (server_trust.h); it is unused for http://.
  SignedClient(std::string base_url, ClientCredentials credentials, ServerTrust trust = {});

  // One request. `path` may carry a query ("/v1/agent/desired?node=a&after=3"). Unavailable
  // when the server cannot be reached or the read times out; FailedPrecondition when an https
  // server is not the one `trust` names (nothing was sent; the message names both pins, or the
  // CA bundle); otherwise the reply, whatever its status.
  Result<HttpReply> Send(std::string_view method, std::string_view path, std::string_view body,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10),
                         std::string_view content_type = "application/json") const;

  // Send + JSON: a 2xx reply's body parsed. Non-2xx becomes an error whose message is the
  // server's {"error": ...} text (or the body), with the code from the status: 400
  // InvalidArgument, 403 FailedPrecondition, 404 NotFound, 409 AlreadyExists/FailedPrecondition,
  // 5xx and unreachable Unavailable.
  Result<nlohmann::json> Json(std::string_view method, std::string_view path,
                              const nlohmann::json* body = nullptr,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

  // The headers Send would put on this request, signature included: Host, Content-Type (with a
  // body), X-Amz-Date, X-Amz-Content-Sha256 and Authorization. For callers that bring their own
  // transport (`carve fleet-sim`'s event-driven client) and must sign exactly as the agent does.
  std::vector<std::pair<std::string, std::string>> SignedHeaders(
      std::string_view method, std::string_view path, std::string_view body,
      std::string_view content_type = "application/json") const;

  const std::string& base_url() const { return base_url_; }
  const ServerTrust& trust() const { return trust_; }

 private:
  std::string base_url_;
  std::string host_header_;
  ClientCredentials credentials_;
  ServerTrust trust_;
};

}  // namespace carve::protocol
