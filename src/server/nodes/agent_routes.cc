#include "server/nodes/agent_routes.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>

#include "common/bounded_json.h"
#include "http/native_reply.h"

namespace carve::server::nodes {
namespace {

std::string Query(const http::NativeRequest& r, const std::string& key) {
  auto it = r.query.find(key);
  return it == r.query.end() ? "" : it->second;
}

Result<uint64_t> QueryNumber(const http::NativeRequest& r, const std::string& key,
                             uint64_t fallback) {
  const std::string text = Query(r, key);
  if (text.empty()) return fallback;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return InvalidArgument("query parameter " + key + "='" + text +
                           "' must be a non-negative integer");
  }
  return v;
}

// Bounded nesting, no repeated keys (common/bounded_json.h): agents hold credentials, but a
// stolen one must not crash the server either.
Result<nlohmann::json> Body(const http::NativeRequest& r) {
  Result<nlohmann::json> j = ParseJson(r.body);
  if (!j.has_value()) return InvalidArgument("the request body " + j.error().message);
  return j;
}

// A node speaks only for itself: the node id a request names must be the one its credential is
// bound to. A server run with --insecure-no-auth takes the id on trust (its callers are every
// principal at once, operator included, and hold no node credential).
std::optional<http::NativeResponse> NotForThisNode(const http::NativeRequest& r,
                                                   const std::string& node, std::string_view what) {
  if (r.node_id == node) return std::nullopt;
  if (r.node_id.empty() && r.caller.Has(http::Principal::kOperator)) return std::nullopt;
  return http::JsonReply(403,
                         {{"error", fmt::format("{} names node '{}', but the caller's credential "
                                                "is bound to node '{}'; a node speaks only for "
                                                "itself",
                                                what, node.substr(0, 64), r.node_id)},
                          {"code", "AccessDenied"}});
}

Result<int64_t> TtlSeconds(const nlohmann::json& body) {
  if (!body.contains("ttl_seconds")) return NodeIdentity::kDefaultTtl.count();
  const auto& v = body["ttl_seconds"];
  if (!v.is_number_integer()) {
    return InvalidArgument("ttl_seconds: must be a whole number of seconds, got " +
                           v.dump().substr(0, 32));
  }
  return v.get<int64_t>();
}

nlohmann::json TokenJson(const BootstrapToken& t) {
  nlohmann::json j{{"id", t.id}, {"expires_ms", t.expires_ms}, {"description", t.description}};
  if (!t.token.empty()) j["token"] = t.token;
  return j;
}

void RegisterIdentityRoutes(http::HttpServer& server, NodeIdentity& identity,
                            const std::string& pin) {
  server.AddRoute(
      "POST", "/v1/agent/join", http::kForJoiners, [&identity](const http::NativeRequest& r) {
        auto body = Body(r);
        if (!body.has_value()) return http::ErrorReply(body.error());
        if (!body->is_object() || !(*body)["node_id"].is_string()) {
          return http::ErrorReply(InvalidArgument("node_id: required, a string"));
        }
        const std::string node = (*body)["node_id"].get<std::string>();
        auto credential = identity.Join(r.node_id, node);
        if (!credential.has_value()) return http::ErrorReply(credential.error());
        spdlog::info("node {} joined with bootstrap token {}", node, r.node_id);
        return http::JsonReply(201, {{"node_id", node}, {"credential", *credential}}, -1);
      });
  server.AddRoute(
      "POST", "/v1/node-tokens", http::kForOperators,
      [&identity, pin](const http::NativeRequest& r) {
        auto body = r.body.empty() ? Result<nlohmann::json>(nlohmann::json::object()) : Body(r);
        if (!body.has_value()) return http::ErrorReply(body.error());
        if (!body->is_object())
          return http::ErrorReply(InvalidArgument("the request body: a JSON object"));
        auto ttl = TtlSeconds(*body);
        if (!ttl.has_value()) return http::ErrorReply(ttl.error());
        const auto& d = (*body)["description"];
        if (!d.is_null() && !d.is_string()) {
          return http::ErrorReply(InvalidArgument("description: a string"));
        }
        auto token = identity.CreateBootstrapToken(std::chrono::seconds(*ttl),
                                                   d.is_string() ? d.get<std::string>() : "");
        if (!token.has_value()) return http::ErrorReply(token.error());
        spdlog::info("bootstrap token {} created, valid until {} ms", token->id, token->expires_ms);
        nlohmann::json out = TokenJson(*token);
        if (!pin.empty()) out["server_cert_sha256"] = pin;
        return http::JsonReply(201, out);
      });
  server.AddRoute("GET", "/v1/node-tokens", http::kForOperators,
                  [&identity](const http::NativeRequest&) {
                    auto tokens = identity.ListBootstrapTokens();
                    if (!tokens.has_value()) return http::ErrorReply(tokens.error());
                    nlohmann::json out = nlohmann::json::array();
                    for (const auto& t : *tokens) out.push_back(TokenJson(t));
                    return http::JsonReply(200, {{"Tokens", out}});
                  });
  server.AddRoute("DELETE", "/v1/node-tokens/{id}", http::kForOperators,
                  [&identity](const http::NativeRequest& r) {
                    const std::string& id = r.path_params.at("id");
                    Status s = identity.DeleteBootstrapToken(id);
                    if (!s.ok()) return http::ErrorReply(s.error());
                    return http::JsonReply(200, {{"id", id}, {"deleted", true}});
                  });
  server.AddRoute("GET", "/v1/node-credentials", http::kForOperators,
                  [&identity](const http::NativeRequest&) {
                    auto all = identity.ListNodeCredentials();
                    if (!all.has_value()) return http::ErrorReply(all.error());
                    nlohmann::json out = nlohmann::json::array();
                    for (const auto& c : *all) {
                      out.push_back({{"node_id", c.node_id},
                                     {"credential_id", c.credential_id},
                                     {"created_ms", c.created_ms},
                                     {"joined_with", c.joined_with}});
                    }
                    return http::JsonReply(200, {{"Credentials", out}});
                  });
  server.AddRoute("DELETE", "/v1/nodes/{node}/credential", http::kForOperators,
                  [&identity](const http::NativeRequest& r) {
                    const std::string& node = r.path_params.at("node");
                    Status s = identity.Revoke(node);
                    if (!s.ok()) return http::ErrorReply(s.error());
                    spdlog::warn("node {}: credential revoked", node);
                    return http::JsonReply(200, {{"node_id", node}, {"revoked", true}});
                  });
}

}  // namespace

void RegisterAgentRoutes(http::HttpServer& server, NodeRegistry& registry, NodeIdentity& identity,
                         std::string server_cert_pin) {
  RegisterIdentityRoutes(server, identity, server_cert_pin);
  server.AddRoute("POST", "/v1/agent/register", http::kForNodes,
                  [&registry](const http::NativeRequest& r) {
                    auto body = Body(r);
                    if (!body.has_value()) return http::ErrorReply(body.error());
                    auto reg = protocol::RegistrationFromJson(*body);
                    if (!reg.has_value()) return http::ErrorReply(reg.error());
                    if (auto refused = NotForThisNode(r, reg->node_id, "the registration"))
                      return *refused;
                    auto reply = registry.Register(*reg);
                    if (!reply.has_value()) return http::ErrorReply(reply.error());
                    return http::JsonReply(200, protocol::ToJson(*reply), -1);
                  });
  // The long-poll holds no thread: a registry waiter answers it when the node's desired state
  // changes or its wait ends.
  server.AddAsyncRoute(
      "GET", "/v1/agent/desired", http::kForNodes,
      [&registry](http::NativeRequest r, http::Responder respond) {
        const std::string node = Query(r, "node");
        if (node.empty()) {
          return respond(http::ErrorReply(InvalidArgument("query parameter node is required")));
        }
        auto after = QueryNumber(r, "after", 0);
        if (!after.has_value()) return respond(http::ErrorReply(after.error()));
        if (Status ok = protocol::CheckNodeId(node, "long-poll"); !ok.ok()) {
          return respond(http::ErrorReply(ok.error()));
        }
        if (auto refused = NotForThisNode(r, node, "the long-poll")) {
          return respond(std::move(*refused));
        }
        auto wait = QueryNumber(r, "wait_ms", 0);
        if (!wait.has_value()) return respond(http::ErrorReply(wait.error()));
        registry.WatchDesired(node, Query(r, "epoch"), *after, std::chrono::milliseconds(*wait),
                              [respond](Result<protocol::DesiredState> desired) {
                                if (!desired.has_value())
                                  return respond(http::ErrorReply(desired.error()));
                                respond(http::JsonReply(200, protocol::ToJson(*desired), -1));
                              });
      });
  server.AddRoute("POST", "/v1/agent/heartbeat", http::kForNodes,
                  [&registry](const http::NativeRequest& r) {
                    auto body = Body(r);
                    if (!body.has_value()) return http::ErrorReply(body.error());
                    auto hb = protocol::HeartbeatFromJson(*body);
                    if (!hb.has_value()) return http::ErrorReply(hb.error());
                    if (auto refused = NotForThisNode(r, hb->node_id, "the heartbeat"))
                      return *refused;
                    return http::JsonReply(200, protocol::ToJson(registry.Heartbeat(*hb)), -1);
                  });
  server.AddRoute(
      "POST", "/v1/agent/status", http::kForNodes, [&registry](const http::NativeRequest& r) {
        auto body = Body(r);
        if (!body.has_value()) return http::ErrorReply(body.error());
        auto report = protocol::StatusReportFromJson(*body);
        if (!report.has_value()) return http::ErrorReply(report.error());
        if (auto refused = NotForThisNode(r, report->node_id, "the status report")) return *refused;
        return http::JsonReply(200, protocol::ToJson(registry.ReportStatus(*report)), -1);
      });
  server.AddRoute("GET", "/v1/nodes", http::kForOperators, [&registry](const http::NativeRequest&) {
    return http::JsonReply(200, registry.ToJson());
  });
}

}  // namespace carve::server::nodes
