// ReplicaForwarder: what a standby replica answers itself, and what it sends on to the leader
// (docs/ha.md, "Standbys serve").
//
// A standby keeps a watch cache of the store (store/record_cache.h) and answers the calls whose
// answers are records only: SageMaker's Describe* and List* (except DescribeEndpoint: its
// CurrentInstanceCount leaves out instances whose agents went silent, and node liveness lives
// only in the leader's memory, by design), Application Auto Scaling's Describe*, and GET
// /v1/cluster, /ping and /metrics. Every read from the cache first learns etcd's current
// revision, so it sees every write acknowledged before it, whichever replica took the write.
//
// Every other request goes to the leader exactly as it came: the method, the path and query
// as sent, every end-to-end header (Host included) and the body. The leader verifies the
// caller's SigV4 signature itself, so a standby holds no authority of its own. The leader's
// answer comes back as it is. Forwarding rather than answering with a redirect, because
// botocore sends with urllib3's redirects off (Retry(False)) and would hand a 307 to the caller
// as an error, and so would the aws CLI.
//
// While no leader answers (it was just lost and the lease has not expired yet), a request
// waits, up to `leader_wait`, and is then sent to the new leader, or served here when this
// replica is the one that now leads. A request is sent again only when it could not have been
// delivered (the connection was refused); one that was delivered and got no answer is a 502
// that says the outcome is unknown. A request waiting on a leader that is no longer the leader
// (it was paused, not killed, so its connections hang) is cut off, and is such a 502, when this
// replica starts to lead or sees another leader. A request another replica forwarded is never
// forwarded again (no loops between replicas that disagree on the leader). Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "http/http_server.h"
#include "http/metrics.h"
#include "protocol/server_trust.h"

namespace httplib {
class Client;
}

namespace carve::app {

// What a replica is: a standby forwards; once it won the lease it recovers (kPromoting, when
// requests wait) and then serves everything itself (kLeading).
enum class ReplicaRole { kStandby, kPromoting, kLeading };

struct ReplicaForwarderOptions {
  std::string self;  // This replica's identity (its URL).
  // The leader's identity as registered ("" while none leads); it may read etcd.
  std::function<Result<std::string>()> leader;
  std::chrono::milliseconds leader_wait{std::chrono::seconds(10)};
  // How long the leader may take to answer: longer than an agent's long-poll.
  std::chrono::milliseconds answer_timeout{std::chrono::seconds(120)};
  // How an https:// leader is trusted: by the pin of this replica's own certificate, which every
  // replica shares (docs/ha.md, "TLS").
  protocol::ServerTrust trust{};
};

class ReplicaForwarder {
 public:
  ReplicaForwarder(ReplicaForwarderOptions options, http::MetricsRegistry& metrics);
  ~ReplicaForwarder();
  ReplicaForwarder(const ReplicaForwarder&) = delete;
  ReplicaForwarder& operator=(const ReplicaForwarder&) = delete;

  // For HttpServer::SetForwarder: active until the role is kLeading.
  http::Forwarder Hook();
  void SetRole(ReplicaRole role);
  ReplicaRole role() const;

  // Whether a standby answers `request` itself (from its cache) rather than forwarding it.
  static bool ServedByStandby(const http::RawRequest& request);
  // The answer to `request` on a replica that does not lead yet; nullopt: serve it here.
  std::optional<http::NativeResponse> Forward(const http::RawRequest& request);

  static constexpr const char* kForwardedByHeader = "x-carve-forwarded-by";

 private:
  struct Sent;
  // The leader's base URL, read again when `refresh` or when the one known is older than 1 s.
  std::string LeaderUrl(bool refresh);
  Sent Send(const std::string& url, const http::RawRequest& request);
  // Cuts off the requests waiting on an answer from `url` ("": from anyone).
  void CutOff(const std::string& url);

  const ReplicaForwarderOptions options_;
  http::Counter& forwarded_;
  mutable std::mutex mu_;
  ReplicaRole role_ = ReplicaRole::kStandby;             // Guarded by mu_.
  std::string leader_url_;                               // Guarded by mu_.
  std::chrono::steady_clock::time_point leader_read_{};  // Guarded by mu_.
  std::mutex flight_mu_;
  // Requests being forwarded, by the leader URL they wait on. Guarded by flight_mu_, which is
  // held while one is cut off (httplib's Client::stop may be called from any thread).
  std::set<std::pair<std::string, httplib::Client*>> in_flight_;
};

}  // namespace carve::app
