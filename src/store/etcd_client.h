// EtcdClient: etcd v3 through its JSON gateway, the grpc-gateway every etcd member serves on its
// client port (POST /v3/<service>/<rpc>, bytes fields as base64, int64 fields as strings;
// docs/research/etcd-gateway.md has the verified rules, docs/ha.md why the gateway and not gRPC).
//
// Endpoints and failover: the client talks to one member at a time and moves to the next on a
// connection failure, a timeout or a 5xx answer (an unavailable member, no leader, a timed-out
// proposal). What it may resend is decided per call:
//   - kRead (range, read-only txn, lease and cluster queries): retried on every member in turn
//     until the deadline, because resending changes nothing.
//   - kWrite (a txn that writes, a lease grant or revoke): resent only when it cannot have
//     reached a member (the connection was refused). A write that was sent and then failed has
//     an unknown outcome: etcd may have applied it. The reply says so (outcome_unknown), and the
//     caller re-reads before it tries again (EtcdStore does, by the commit id it wrote).
//
// Errors: InvalidArgument for a request etcd refused as malformed or too large (code 3), NotFound
// for an unknown lease (5), FailedPrecondition for a compacted or future revision (11), Unavailable
// when no member answered in time, when etcd's space quota is exhausted (its NOSPACE alarm), or
// for any other server-side failure.
// Thread-safe: each call borrows an idle keep-alive connection to the current member, or opens
// one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace httplib {
class Client;
}

namespace carve::store {

// TLS to the members (etcd's --cert-file/--key-file, and --client-cert-auth with
// --trusted-ca-file): the CA that signed their certificates, and this client's certificate and
// key when they ask for one. Paths to PEM files; every member's certificate is verified.
struct EtcdTls {
  bool enabled = false;
  std::string ca_file{};    // "": the system's CAs.
  std::string cert_file{};  // "" (with key_file ""): no client certificate.
  std::string key_file{};
};

struct EtcdClientOptions {
  std::vector<std::string> endpoints;  // "host:port" of the members' client URLs.
  std::chrono::milliseconds connect_timeout{500};
  // How long one exchange with a member may take, and a call's budget for trying members in
  // turn (each member gets one try even when the budget ran out on an earlier one).
  std::chrono::milliseconds request_timeout{5000};
  EtcdTls tls{};  // Off: plain HTTP.
};

enum class EtcdCall { kRead, kWrite };

struct EtcdReply {
  Result<nlohmann::json> body;
  // Only for a failed kWrite: it was sent, so etcd may have applied it.
  bool outcome_unknown = false;
  // With outcome_unknown: false when sending it again cannot succeed now. etcd's NOSPACE alarm
  // refuses every write, yet the one that crossed the quota was applied before it said so.
  bool worth_resending = true;
};

// One member as `MemberList` reports it, with its health from its own /health.
struct EtcdMember {
  uint64_t id = 0;
  std::string name;
  std::vector<std::string> client_urls;
};

// Parses "etcd://host:port,host:port[/prefix]" (etcds:// for TLS) into the endpoints and the
// key prefix ("/carve" when none is given). InvalidArgument names what is wrong.
struct EtcdUrl {
  std::vector<std::string> endpoints;
  std::string prefix;
  bool tls = false;
};
Result<EtcdUrl> ParseEtcdUrl(std::string_view url);

// The smallest key greater than every key that starts with `prefix` (etcd's range_end for a
// prefix): the prefix with its last byte below 0xff incremented and what follows it dropped;
// "\0" (the end of the keyspace) when every byte is 0xff.
std::string PrefixEnd(std::string_view prefix);

class EtcdClient {
 public:
  explicit EtcdClient(EtcdClientOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // POST /v3/<rpc> (for example "kv/range") with `request`; returns the response object.
  EtcdReply Call(std::string_view rpc, const nlohmann::json& request, EtcdCall kind);
  // Call for a kRead, as a Result.
  Result<nlohmann::json> Read(std::string_view rpc, const nlohmann::json& request);

  // A watch stream (POST /v3/watch, one WatchCreateRequest): calls `on_message` with each
  // response's "result" object until it returns false, the stream ends or breaks, or
  // CancelStreams. Returns OK when `on_message` ended it, Unavailable otherwise; the caller
  // resumes from the last revision it saw. `idle_timeout` ends a stream that sends nothing for
  // that long (etcd sends progress notifications only when asked).
  Status Stream(const nlohmann::json& create_request,
                const std::function<bool(const nlohmann::json&)>& on_message,
                std::chrono::milliseconds idle_timeout);
  // Breaks every open Stream and refuses new ones (for shutdown).
  void CancelStreams();

  // Leases: Grant returns the lease id; KeepAlive returns the TTL left (NotFound once the lease
  // expired or was revoked).
  Result<int64_t> LeaseGrant(std::chrono::seconds ttl);
  Result<int64_t> LeaseKeepAlive(int64_t lease);
  Status LeaseRevoke(int64_t lease);

  Result<std::vector<EtcdMember>> MemberList();
  // GET http://ENDPOINT/health on that one member: OK when it answers {"health":"true"}.
  Status Health(const std::string& endpoint);

  const std::vector<std::string>& endpoints() const { return options_.endpoints; }
  // The member calls go to now (it changes on failover).
  std::string current_endpoint() const;

 private:
  struct Pool;
  std::unique_ptr<httplib::Client> Borrow(size_t member);
  void Return(size_t member, std::unique_ptr<httplib::Client> client);
  std::unique_ptr<httplib::Client> Connect(size_t member) const;
  // A connection to `endpoint` over HTTP or TLS, with `io` as its read and write timeout.
  std::unique_ptr<httplib::Client> NewClient(const std::string& endpoint,
                                             std::chrono::milliseconds io) const;

  const EtcdClientOptions options_;
  std::atomic<size_t> current_{0};            // Index into options_.endpoints.
  std::vector<std::unique_ptr<Pool>> pools_;  // One per endpoint; each has its own mutex.

  std::mutex streams_mu_;
  std::vector<httplib::Client*> streams_;  // Open Stream connections. Guarded by streams_mu_.
  bool cancelled_ = false;                 // Guarded by streams_mu_.
};

}  // namespace carve::store
