#include "agent/node/control_plane.h"

#include <fmt/format.h>

#include <cctype>

namespace carve::agent::node {

std::string QueryEscape(const std::string& value) {
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string DesiredStatePath(const std::string& node, const std::string& epoch, uint64_t after,
                             std::chrono::milliseconds wait) {
  return fmt::format("/v1/agent/desired?node={}&epoch={}&after={}&wait_ms={}", QueryEscape(node),
                     QueryEscape(epoch), after, wait.count());
}

HttpControlPlane::HttpControlPlane(protocol::SignedClient client) {
  clients_.push_back(std::move(client));
}

HttpControlPlane::HttpControlPlane(std::vector<protocol::SignedClient> clients)
    : clients_(std::move(clients)) {}

template <typename T>
Result<T> HttpControlPlane::OnAnyServer(
    const std::function<Result<T>(const protocol::SignedClient&)>& call) {
  const size_t n = clients_.size();
  const size_t first = current_.load() % n;
  Result<T> r = call(clients_[first]);
  for (size_t i = 1; i < n && !r.has_value() && r.error().code == ErrorCode::kUnavailable; ++i) {
    const size_t next = (first + i) % n;
    r = call(clients_[next]);
    if (r.has_value() || r.error().code != ErrorCode::kUnavailable) current_ = next;
  }
  return r;
}

Result<protocol::RegisterReply> HttpControlPlane::Register(
    const protocol::Registration& registration) {
  const nlohmann::json body = protocol::ToJson(registration);
  return OnAnyServer<protocol::RegisterReply>(
      [&](const protocol::SignedClient& c) -> Result<protocol::RegisterReply> {
        CARVE_ASSIGN_OR_RETURN(nlohmann::json reply, c.Json("POST", "/v1/agent/register", &body));
        return protocol::RegisterReplyFromJson(reply);
      });
}

Result<protocol::DesiredState> HttpControlPlane::WatchDesired(const std::string& node,
                                                              const std::string& epoch,
                                                              uint64_t after,
                                                              std::chrono::milliseconds wait) {
  const std::string path = DesiredStatePath(node, epoch, after, wait);
  // The server holds the request for up to `wait`; the read timeout must outlast it.
  return OnAnyServer<protocol::DesiredState>(
      [&](const protocol::SignedClient& c) -> Result<protocol::DesiredState> {
        CARVE_ASSIGN_OR_RETURN(nlohmann::json reply,
                               c.Json("GET", path, nullptr, wait + std::chrono::seconds(10)));
        return protocol::DesiredStateFromJson(reply);
      });
}

Result<protocol::StatusReply> HttpControlPlane::Report(const protocol::StatusReport& report) {
  const nlohmann::json body = protocol::ToJson(report);
  return OnAnyServer<protocol::StatusReply>(
      [&](const protocol::SignedClient& c) -> Result<protocol::StatusReply> {
        CARVE_ASSIGN_OR_RETURN(nlohmann::json reply, c.Json("POST", "/v1/agent/status", &body));
        return protocol::StatusReplyFromJson(reply);
      });
}

Result<protocol::HeartbeatReply> HttpControlPlane::Heartbeat(const protocol::Heartbeat& heartbeat) {
  const nlohmann::json body = protocol::ToJson(heartbeat);
  return OnAnyServer<protocol::HeartbeatReply>(
      [&](const protocol::SignedClient& c) -> Result<protocol::HeartbeatReply> {
        CARVE_ASSIGN_OR_RETURN(nlohmann::json reply, c.Json("POST", "/v1/agent/heartbeat", &body));
        return protocol::HeartbeatReplyFromJson(reply);
      });
}

}  // namespace carve::agent::node
