#include "runtime/token_routes.h"

#include <nlohmann/json.hpp>

#include "aws/bearer_token.h"
#include "common/bounded_json.h"
#include "http/native_reply.h"

namespace carve::runtime {
namespace {

using nlohmann::json;

http::NativeResponse Refused(int status, const std::string& code, const std::string& message) {
  return http::JsonReply(status, json{{"error", message}, {"code", code}});
}

http::NativeResponse Revoke(const http::NativeRequest& r, BearerRevocations& revocations,
                            const TokenRouteOptions& o, const Clock& clock) {
  Result<json> body = ParseJson(r.body);
  if (!body.has_value() || !body->is_object() || !body->contains("token") ||
      !(*body)["token"].is_string()) {
    return Refused(400, "ValidationException",
                   "POST /v1/tokens/revoke takes {\"token\": \"<the bearer token>\"}");
  }
  const std::string token = (*body)["token"];
  auto verified = aws::VerifyBearerToken(token, *o.credentials, clock, o.service, o.region);
  if (auto* f = std::get_if<aws::AuthFailure>(&verified)) {
    if (f->type == "ExpiredTokenException") {
      return http::JsonReply(200, json{{"revoked", false}, {"expired", f->message}});
    }
    return Refused(400, "ValidationException", "The token cannot be revoked: " + f->message);
  }
  const aws::VerifiedBearer& t = std::get<aws::VerifiedBearer>(verified);
  if (t.caller.account_id != r.account_id) {
    return Refused(403, "AccessDeniedException",
                   "The token was not minted with a key of your account; only the account whose "
                   "key minted a token may revoke it");
  }
  if (Status s = revocations.Revoke(t); !s.ok()) return http::ErrorReply(s.error());
  return http::JsonReply(200,
                         json{{"revoked", true},
                              {"token_id", t.id},
                              {"endpoint", t.endpoint.empty() ? json(nullptr) : json(t.endpoint)},
                              {"expires_at", t.expires_at_unix_seconds}});
}

}  // namespace

void RegisterTokenRoutes(http::HttpServer& server, BearerRevocations& revocations,
                         TokenRouteOptions options) {
  const Clock& clock = options.clock != nullptr ? *options.clock : SystemClock::Get();
  server.AddRoute("POST", "/v1/tokens/revoke", http::kForTenants,
                  [&revocations, o = std::move(options), &clock](const http::NativeRequest& r) {
                    return Revoke(r, revocations, o, clock);
                  });
}

}  // namespace carve::runtime
