#include "http/authenticator.h"

#include <nlohmann/json.hpp>

#include "aws/bearer_token.h"
#include "http/http_internal.h"

namespace carve::http {

using internal::ErrorBody;
using internal::kAmzJson;

NativeResponse Refusal(int status, const std::string& type, const std::string& message) {
  NativeResponse res{status, ErrorBody(type, message), kAmzJson};
  res.headers.emplace_back("X-Amzn-Errortype", type);
  return res;
}

NativeResponse OpenAiDenied(const NativeResponse& aws) {
  const auto j = nlohmann::json::parse(aws.body, nullptr, false);
  const std::string type =
      aws.headers.empty() ? "AccessDeniedException" : aws.headers.back().second;
  const std::string message = j.is_object() ? j.value("message", aws.body) : aws.body;
  NativeResponse out{aws.http_status,
                     nlohmann::json{{"error",
                                     {{"message", message},
                                      {"type", "authentication_error"},
                                      {"param", nullptr},
                                      {"code", type}}}}
                         .dump(),
                     "application/json"};
  out.headers.emplace_back("X-Amzn-Errortype", type);
  return out;
}

Authenticator::Authenticator(const HttpServerOptions& options, const aws::Credentials& credentials,
                             const Clock& clock)
    : options_(options),
      credentials_(credentials),
      clock_(clock),
      verifier_(credentials, clock, options.signing_service, options.region,
                options.max_clock_skew) {}

std::variant<Authenticator::Caller, NativeResponse> Authenticator::Authenticate(
    RawRequest& request, std::string_view service) const {
  if (options_.insecure_no_auth) {
    // Everyone at once, node and joiner included: the agents of such a server send no
    // credential, and their node id is taken on trust (nodes/agent_routes.cc).
    return Caller{options_.insecure_account_id, Principal::kTenant | Principal::kOperator |
                                                    Principal::kNode | Principal::kJoiner};
  }
  aws::SigV4Request sr;
  sr.method = request.method;
  sr.path = request.path;
  sr.query = request.query;
  sr.headers = std::move(request.headers);  // Lent for verification, handed back below.
  sr.body = std::move(request.body);
  aws::AuthOutcome outcome = verifier_.Verify(sr, service);
  request.headers = std::move(sr.headers);
  request.body = std::move(sr.body);
  if (auto* caller = std::get_if<aws::VerifiedCaller>(&outcome)) {
    const auto key = credentials_.Find(caller->access_key_id);
    const bool op = key.has_value() && key->operator_role;
    return Caller{caller->account_id,
                  op ? Principal::kTenant | Principal::kOperator : Principals(Principal::kTenant)};
  }
  const auto& f = std::get<aws::AuthFailure>(outcome);
  return Refusal(f.http_status, f.type, f.message);
}

std::optional<NativeResponse> Authenticator::AuthenticateBearer(std::string_view token,
                                                                NativeRequest& out) const {
  if (options_.insecure_no_auth) {
    out.account_id = options_.insecure_account_id;
    return std::nullopt;
  }
  auto outcome = aws::VerifyBearerToken(token, credentials_, clock_, options_.signing_service,
                                        options_.region);
  if (auto* ok = std::get_if<aws::VerifiedBearer>(&outcome)) {
    if (options_.bearer_token_revoked && options_.bearer_token_revoked(ok->id)) {
      return Refusal(401, "UnrecognizedClientException",
                     "The bearer token was revoked (carve token revoke); mint another with carve "
                     "token");
    }
    out.account_id = ok->caller.account_id;
    out.bearer_endpoint = ok->endpoint;
    return std::nullopt;
  }
  const auto& f = std::get<aws::AuthFailure>(outcome);
  return Refusal(f.http_status, f.type, f.message);
}

std::optional<NativeResponse> Authenticator::Identify(const Access& access, const std::string& what,
                                                      RawRequest& request,
                                                      NativeRequest& out) const {
  if (access.serves.Has(Principal::kAnonymous)) {
    out.caller = Principal::kAnonymous;
    return std::nullopt;
  }
  const std::string authorization = request.Header("Authorization");
  const bool bearer = authorization.starts_with("Bearer ");
  std::optional<NativeResponse> denied;
  if (bearer && access.serves.Has(Principal::kScraper) && options_.scrape_token_ok &&
      options_.scrape_token_ok(std::string_view(authorization).substr(7))) {
    out.caller = Principal::kScraper;
  } else if (bearer && access.serves.Has(Principal::kNode)) {
    const auto node = options_.node_credential_ok
                          ? options_.node_credential_ok(std::string_view(authorization).substr(7))
                          : std::nullopt;
    if (node) {
      out.caller = Principal::kNode;
      out.node_id = *node;
    } else {
      denied = Refusal(401, "UnrecognizedClientException",
                       what +
                           ": the node credential is unknown or was revoked; the node joins "
                           "again with a bootstrap token (carve node token create)");
    }
  } else if (bearer && access.serves.Has(Principal::kJoiner)) {
    const auto token = options_.bootstrap_token_ok
                           ? options_.bootstrap_token_ok(std::string_view(authorization).substr(7))
                           : std::nullopt;
    if (token) {
      out.caller = Principal::kJoiner;
      out.node_id = *token;
    } else {
      denied = Refusal(401, "UnrecognizedClientException",
                       what + ": the bootstrap token is unknown, expired or deleted");
    }
  } else if (bearer && access.endpoint_tokens) {
    denied = AuthenticateBearer(std::string_view(authorization).substr(7), out);
    if (!denied) out.caller = Principal::kTenant;
  } else if (bearer) {
    denied = Refusal(401, "UnrecognizedClientException",
                     what + " does not take this bearer token; it serves " + access.serves.Names());
  } else {
    auto caller = Authenticate(request);
    if (auto* refused = std::get_if<NativeResponse>(&caller)) {
      denied = std::move(*refused);
    } else {
      auto& verified = std::get<Caller>(caller);
      out.account_id = std::move(verified.account_id);
      out.caller = verified.principals;
    }
  }
  if (!denied && !access.serves.Overlaps(out.caller)) {
    denied = Refusal(
        403, "AccessDeniedException",
        what + " serves " + access.serves.Names() + "; the caller is " + out.caller.Names());
  }
  if (denied && access.endpoint_tokens) return OpenAiDenied(*denied);
  return denied;
}

}  // namespace carve::http
