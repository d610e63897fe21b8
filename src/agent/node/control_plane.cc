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

Result<protocol::RegisterReply> HttpControlPlane::Register(
    const protocol::Registration& registration) {
  const nlohmann::json body = protocol::ToJson(registration);
  CARVE_ASSIGN_OR_RETURN(nlohmann::json reply, client_.Json("POST", "/v1/agent/register", &body));
  return protocol::RegisterReplyFromJson(reply);
}

Result<protocol::DesiredState> HttpControlPlane::WatchDesired(const std::string& node,
                                                              const std::string& epoch,
                                                              uint64_t after,
                                                              std::chrono::milliseconds wait) {
  const std::string path = DesiredStatePath(node, epoch, after, wait);
  // The server holds the request for up to `wait`; the read timeout must outlast it.
  CARVE_ASSIGN_OR_RETURN(nlohmann::json reply,
                         client_.Json("GET", path, nullptr, wait + std::chrono::seconds(10)));
  return protocol::DesiredStateFromJson(reply);
}

Result<protocol::StatusReply> HttpControlPlane::Report(const protocol::StatusReport& report) {
  const nlohmann::json body = protocol::ToJson(report);
  CARVE_ASSIGN_OR_RETURN(nlohmann::json reply, client_.Json("POST", "/v1/agent/status", &body));
  return protocol::StatusReplyFromJson(reply);
}

Result<protocol::HeartbeatReply> HttpControlPlane::Heartbeat(const protocol::Heartbeat& hb) {
  const nlohmann::json body = protocol::ToJson(hb);
  CARVE_ASSIGN_OR_RETURN(nlohmann::json reply,
                         client_.Json("POST", "/v1/agent/heartbeat", &body));
  return protocol::HeartbeatReplyFromJson(reply);
}

}  // namespace carve::agent::node
