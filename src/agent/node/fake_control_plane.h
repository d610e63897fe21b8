// FakeControlPlane: an in-memory server side of the agent protocol for agent tests.
//
// Tests set the desired state (SetDesired bumps the version and wakes the long-poll), read what
// the agent registered and reported, and inject failures: SetReachable(false) makes every call
// Unavailable (a server that is down), RequestReregister() answers the next report with
// reregister = true (a server that lost the node), Restart() changes the epoch.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <vector>

#include "agent/node/control_plane.h"

namespace carve::agent::node {

class FakeControlPlane final : public ControlPlane {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  Result<protocol::RegisterReply> Register(const protocol::Registration& registration) override {
    std::lock_guard lock(mu_);
    register_attempts_.push_back(std::chrono::steady_clock::now());
    if (!reachable_) return Unavailable("fake server is down");
    registrations_.push_back(registration);
    registered_ = true;
    protocol::RegisterReply reply;
    reply.node_id = registration.node_id;
    reply.epoch = epoch_;
    reply.heartbeat_interval_ms = heartbeat_ms_;
    return reply;
  }

  Result<protocol::DesiredState> WatchDesired(const std::string& node, const std::string& epoch,
                                              uint64_t after,
                                              std::chrono::milliseconds wait) override {
    std::unique_lock lock(mu_);
    if (!reachable_) return Unavailable("fake server is down");
    if (!registered_) return NotFound("node " + node + " is not registered");
    cv_.wait_for(lock, wait, [&] {
      return !reachable_ || desired_.version > after || epoch != epoch_;
    });
    if (!reachable_) return Unavailable("fake server is down");
    protocol::DesiredState state = desired_;
    state.node_id = node;
    state.epoch = epoch_;
    return state;
  }

  Result<protocol::StatusReply> Report(const protocol::StatusReport& report) override {
    std::lock_guard lock(mu_);
    if (!reachable_) return Unavailable("fake server is down");
    reports_.push_back(report);
    cv_.notify_all();
    protocol::StatusReply reply;
    reply.desired_epoch = epoch_;
    reply.desired_version = desired_.version;
    reply.reregister = !registered_ || report.epoch != epoch_;
    return reply;
  }

  Result<protocol::HeartbeatReply> Heartbeat(const protocol::Heartbeat& hb) override {
    std::lock_guard lock(mu_);
    if (!reachable_) return Unavailable("fake server is down");
    heartbeats_.push_back(hb);
    cv_.notify_all();
    protocol::HeartbeatReply reply;
    reply.desired_epoch = epoch_;
    reply.desired_version = desired_.version;
    reply.reregister = !registered_ || hb.epoch != epoch_;
    // Like the server: the full status is wanted when the last one seen is another version.
    reply.send_status = reports_.empty() || reports_.back().status_version != hb.status_version;
    return reply;
  }
  std::vector<protocol::Heartbeat> heartbeats() const {
    std::lock_guard lock(mu_);
    return heartbeats_;
  }

  // Replaces the desired GPUs and workloads and bumps the version.
  void SetDesired(std::vector<protocol::GpuDesired> gpus,
                  std::vector<protocol::WorkloadDesired> workloads) {
    std::lock_guard lock(mu_);
    desired_.gpus = std::move(gpus);
    desired_.workloads = std::move(workloads);
    ++desired_.version;
    cv_.notify_all();
  }
  void SetReachable(bool reachable) {
    std::lock_guard lock(mu_);
    reachable_ = reachable;
    cv_.notify_all();
  }
  // Forgets the node: the next report is answered with reregister = true.
  void RequestReregister() {
    std::lock_guard lock(mu_);
    registered_ = false;
    cv_.notify_all();
  }
  // A new server process: new epoch, the node must register again.
  void Restart(std::string epoch) {
    std::lock_guard lock(mu_);
    epoch_ = std::move(epoch);
    registered_ = false;
    cv_.notify_all();
  }
  void SetHeartbeatMs(int64_t ms) {
    std::lock_guard lock(mu_);
    heartbeat_ms_ = ms;
  }

  std::vector<protocol::Registration> registrations() const {
    std::lock_guard lock(mu_);
    return registrations_;
  }
  std::vector<TimePoint> register_attempts() const {
    std::lock_guard lock(mu_);
    return register_attempts_;
  }
  std::vector<protocol::StatusReport> reports() const {
    std::lock_guard lock(mu_);
    return reports_;
  }
  std::optional<protocol::StatusReport> last_report() const {
    std::lock_guard lock(mu_);
    if (reports_.empty()) return std::nullopt;
    return reports_.back();
  }
  uint64_t version() const {
    std::lock_guard lock(mu_);
    return desired_.version;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  protocol::DesiredState desired_;                 // guarded by mu_
  std::string epoch_ = "epoch-1";                  // guarded by mu_
  bool reachable_ = true;                          // guarded by mu_
  bool registered_ = false;                        // guarded by mu_
  int64_t heartbeat_ms_ = 200;                     // guarded by mu_
  std::vector<protocol::Registration> registrations_;  // guarded by mu_
  std::vector<TimePoint> register_attempts_;        // guarded by mu_
  std::vector<protocol::StatusReport> reports_;     // guarded by mu_
  std::vector<protocol::Heartbeat> heartbeats_;     // guarded by mu_
};

}  // namespace carve::agent::node
