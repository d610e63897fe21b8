#include "server/nodes/agent_routes.h"

#include <charconv>

#include "common/bounded_json.h"
#include "server/native_reply.h"

namespace carve::server::nodes {
namespace {

std::string Query(const NativeRequest& r, const std::string& key) {
  auto it = r.query.find(key);
  return it == r.query.end() ? "" : it->second;
}

Result<uint64_t> QueryNumber(const NativeRequest& r, const std::string& key, uint64_t fallback) {
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
Result<nlohmann::json> Body(const NativeRequest& r) {
  Result<nlohmann::json> j = ParseJson(r.body);
  if (!j.has_value()) return InvalidArgument("the request body " + j.error().message);
  return j;
}

}  // namespace

void RegisterAgentRoutes(HttpServer& http, NodeRegistry& registry) {
  http.AddRoute("POST", "/v1/agent/register", kForNodes, [&registry](const NativeRequest& r) {
    auto body = Body(r);
    if (!body.has_value()) return ErrorReply(body.error());
    auto reg = protocol::RegistrationFromJson(*body);
    if (!reg.has_value()) return ErrorReply(reg.error());
    auto reply = registry.Register(*reg);
    if (!reply.has_value()) return ErrorReply(reply.error());
    return JsonReply(200, protocol::ToJson(*reply), -1);
  });
  // The long-poll holds no thread: a registry waiter answers it when the node's desired state
  // changes or its wait ends.
  http.AddAsyncRoute(
      "GET", "/v1/agent/desired", kForNodes, [&registry](NativeRequest r, Responder respond) {
        const std::string node = Query(r, "node");
        if (node.empty()) {
          return respond(ErrorReply(InvalidArgument("query parameter node is required")));
        }
        auto after = QueryNumber(r, "after", 0);
        if (!after.has_value()) return respond(ErrorReply(after.error()));
        if (Status ok = protocol::CheckNodeId(node, "long-poll"); !ok.ok()) {
          return respond(ErrorReply(ok.error()));
        }
        auto wait = QueryNumber(r, "wait_ms", 0);
        if (!wait.has_value()) return respond(ErrorReply(wait.error()));
        registry.WatchDesired(node, Query(r, "epoch"), *after, std::chrono::milliseconds(*wait),
                              [respond](Result<protocol::DesiredState> desired) {
                                if (!desired.has_value())
                                  return respond(ErrorReply(desired.error()));
                                respond(JsonReply(200, protocol::ToJson(*desired), -1));
                              });
      });
  http.AddRoute("POST", "/v1/agent/heartbeat", kForNodes, [&registry](const NativeRequest& r) {
    auto body = Body(r);
    if (!body.has_value()) return ErrorReply(body.error());
    auto hb = protocol::HeartbeatFromJson(*body);
    if (!hb.has_value()) return ErrorReply(hb.error());
    return JsonReply(200, protocol::ToJson(registry.Heartbeat(*hb)), -1);
  });
  http.AddRoute("POST", "/v1/agent/status", kForNodes, [&registry](const NativeRequest& r) {
    auto body = Body(r);
    if (!body.has_value()) return ErrorReply(body.error());
    auto report = protocol::StatusReportFromJson(*body);
    if (!report.has_value()) return ErrorReply(report.error());
    return JsonReply(200, protocol::ToJson(registry.ReportStatus(*report)), -1);
  });
  http.AddRoute("GET", "/v1/nodes", kForOperators,
                [&registry](const NativeRequest&) { return JsonReply(200, registry.ToJson()); });
}

}  // namespace carve::server::nodes
