// ControlPlane: the node agent's view of the server side of the agent protocol
// (protocol/agent_protocol.h). HttpControlPlane speaks it over SigV4-signed HTTP; tests use
// FakeControlPlane (fake_control_plane.h).
//
// Errors follow SignedClient: Unavailable when the server cannot be reached (retry with
// backoff), NotFound when the server does not know the node (register again), InvalidArgument
// when the server rejects the body (a registration whose instance type does not match, say).
// Implementations are thread-safe: the agent's watcher and reporter call concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "protocol/agent_protocol.h"
#include "protocol/signed_client.h"

namespace carve::agent::node {

class ControlPlane {
 public:
  virtual ~ControlPlane() = default;
  // POST /v1/agent/register.
  virtual Result<protocol::RegisterReply> Register(const protocol::Registration& registration) = 0;
  // GET /v1/agent/desired: the long-poll. Answers once the node's version exceeds `after` (or
  // the server's epoch is not `epoch`), else after `wait` with the current state.
  virtual Result<protocol::DesiredState> WatchDesired(const std::string& node,
                                                      const std::string& epoch, uint64_t after,
                                                      std::chrono::milliseconds wait) = 0;
  // POST /v1/agent/status: the full status.
  virtual Result<protocol::StatusReply> Report(const protocol::StatusReport& report) = 0;
  // POST /v1/agent/heartbeat: liveness between full statuses.
  virtual Result<protocol::HeartbeatReply> Heartbeat(const protocol::Heartbeat& heartbeat) = 0;
};

// Over several server URLs (the replicas of an HA control plane, docs/ha.md) it talks to one at
// a time and moves on to the next when a call finds it Unavailable (not listening, not
// answering, or a standby that does not serve yet), trying each once per call.
class HttpControlPlane final : public ControlPlane {
 public:
  explicit HttpControlPlane(protocol::SignedClient client);
  explicit HttpControlPlane(std::vector<protocol::SignedClient> clients);

  Result<protocol::RegisterReply> Register(const protocol::Registration& registration) override;
  Result<protocol::DesiredState> WatchDesired(const std::string& node, const std::string& epoch,
                                              uint64_t after,
                                              std::chrono::milliseconds wait) override;
  Result<protocol::StatusReply> Report(const protocol::StatusReport& report) override;
  Result<protocol::HeartbeatReply> Heartbeat(const protocol::Heartbeat& heartbeat) override;

 private:
  // Runs `call` on the current server, then on the others in turn while it is Unavailable.
  template <typename T>
  Result<T> OnAnyServer(const std::function<Result<T>(const protocol::SignedClient&)>& call);

  std::vector<protocol::SignedClient> clients_;
  std::atomic<size_t> current_{0};  // Index into clients_.
};

// The long-poll's target: "/v1/agent/desired?node=..&epoch=..&after=..&wait_ms=..".
std::string DesiredStatePath(const std::string& node, const std::string& epoch, uint64_t after,
                             std::chrono::milliseconds wait);

// Percent-encodes a query value (RFC 3986 unreserved characters stay as they are).
std::string QueryEscape(const std::string& value);

}  // namespace carve::agent::node
