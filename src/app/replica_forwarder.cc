#include "app/replica_forwarder.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <strings.h>

#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>
#include <utility>

namespace carve::app {

using http::NativeResponse;
using http::RawRequest;

namespace {

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// Headers that describe one connection, not the request (RFC 9110 7.6.1), and the framing the
// client library writes itself.
bool IsHopByHop(std::string_view name) {
  for (std::string_view hop : {"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                               "te", "trailer", "upgrade", "content-length", "expect"}) {
    if (SameName(name, hop)) return true;
  }
  return false;
}

NativeResponse AwsError(int status, const std::string& type, const std::string& message) {
  NativeResponse r{status, nlohmann::json{{"__type", type}, {"message", message}}.dump(),
                   "application/x-amz-json-1.1"};
  r.headers.emplace_back("X-Amzn-Errortype", type);
  return r;
}

// An identity is its URL, and "#pidN" after it when the replica listens on an unknown port.
std::string UrlOf(const std::string& identity) { return identity.substr(0, identity.find('#')); }

}  // namespace

struct ReplicaForwarder::Sent {
  std::optional<NativeResponse> response;
  bool delivered = false;  // The request may have reached the leader.
  std::string error;
};

ReplicaForwarder::ReplicaForwarder(ReplicaForwarderOptions options, http::MetricsRegistry& metrics)
    : options_(std::move(options)),
      forwarded_(metrics.AddCounter(
          "carve_replica_forwarded_requests_total",
          "Requests a standby replica sent on to the leader, by outcome: forwarded (the leader "
          "answered), unknown (sent, no answer), no_leader (none answered in time), loop (it came "
          "forwarded already).",
          {"outcome"})) {}

ReplicaForwarder::~ReplicaForwarder() = default;

http::Forwarder ReplicaForwarder::Hook() {
  return {.active = [this] { return role() != ReplicaRole::kLeading; },
          .forward = [this](const RawRequest& r) { return Forward(r); }};
}

void ReplicaForwarder::SetRole(ReplicaRole role) {
  {
    std::lock_guard lock(mu_);
    role_ = role;
  }
  // Whoever they wait on does not lead any more: this replica won.
  if (role != ReplicaRole::kStandby) CutOff("");
}

void ReplicaForwarder::CutOff(const std::string& url) {
  std::lock_guard lock(flight_mu_);
  for (const auto& [to, client] : in_flight_) {
    if (url.empty() || to == url) client->stop();
  }
}

ReplicaRole ReplicaForwarder::role() const {
  std::lock_guard lock(mu_);
  return role_;
}

bool ReplicaForwarder::ServedByStandby(const RawRequest& request) {
  if (request.method == "GET") {
    return request.path == "/ping" || request.path == "/metrics" || request.path == "/v1/cluster";
  }
  if (request.method != "POST" || request.path != "/") return false;
  const std::string target = request.Header("X-Amz-Target");
  std::string_view op(target);
  if (op.starts_with("SageMaker.")) {
    op.remove_prefix(std::string_view("SageMaker.").size());
    return op != "DescribeEndpoint" && (op.starts_with("Describe") || op.starts_with("List"));
  }
  if (op.starts_with("AnyScaleFrontendService.")) {
    op.remove_prefix(std::string_view("AnyScaleFrontendService.").size());
    return op.starts_with("Describe");
  }
  return false;
}

std::string ReplicaForwarder::LeaderUrl(bool refresh) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    if (!refresh && !leader_url_.empty() && now - leader_read_ < std::chrono::seconds(1)) {
      return leader_url_;
    }
  }
  Result<std::string> leader = options_.leader();
  const std::string url = leader.has_value() ? UrlOf(*leader) : std::string();
  std::string was;
  {
    std::lock_guard lock(mu_);
    was = std::exchange(leader_url_, url);
    leader_read_ = now;
  }
  if (leader.has_value() && !was.empty() && was != url) CutOff(was);  // It was replaced.
  return url;
}

std::optional<NativeResponse> ReplicaForwarder::Forward(const RawRequest& request) {
  const ReplicaRole first = role();
  if (first == ReplicaRole::kLeading) return std::nullopt;
  if (first == ReplicaRole::kStandby && ServedByStandby(request)) return std::nullopt;
  if (const std::string by = request.Header(kForwardedByHeader); !by.empty()) {
    forwarded_.Increment({"loop"});
    return AwsError(503, "ServiceUnavailable",
                    "replica " + options_.self + " does not lead, and " + by +
                        " forwarded this request here as if it did; retry once a leader is "
                        "elected (carve cluster status)");
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.leader_wait;
  std::string problem = "no replica leads";
  bool refresh = false;
  while (true) {
    const ReplicaRole now = role();
    if (now == ReplicaRole::kLeading) return std::nullopt;  // Won while waiting: serve it here.
    if (now == ReplicaRole::kPromoting) {
      problem = "this replica was elected and is recovering state";
    } else if (const std::string url = LeaderUrl(refresh);
               !url.empty() && url != UrlOf(options_.self)) {
      Sent sent = Send(url, request);
      if (sent.response) {
        forwarded_.Increment({"forwarded"});
        return std::move(sent.response);
      }
      if (sent.delivered) {
        forwarded_.Increment({"unknown"});
        return AwsError(502, "ServiceUnavailable",
                        "the leader " + url + " took the request but did not answer (" +
                            sent.error +
                            "); it may have been applied: read before you retry a write");
      }
      problem = "the leader " + url + " did not take the connection (" + sent.error + ")";
    }
    refresh = true;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  forwarded_.Increment({"no_leader"});
  spdlog::warn("standby {}: {} {} not forwarded: {}", options_.self, request.method, request.path,
               problem);
  return AwsError(503, "ServiceUnavailable",
                  "no leader took the request within " +
                      std::to_string(options_.leader_wait.count()) + " ms (" + problem +
                      "); retry");
}

ReplicaForwarder::Sent ReplicaForwarder::Send(const std::string& url, const RawRequest& request) {
  auto owned = std::make_unique<httplib::Client>(url);
  httplib::Client& client = *owned;
  const std::shared_ptr<protocol::TlsPeer> peer =
      protocol::ApplyServerTrust(client, options_.trust);
  client.set_url_encode(false);  // The path goes on as the caller signed it.
  client.set_keep_alive(false);
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(options_.answer_timeout);
  client.set_write_timeout(std::chrono::seconds(30));
  httplib::Request out;
  out.method = request.method;
  out.path = request.query.empty() ? request.path : request.path + "?" + request.query;
  for (const auto& [name, value] : request.headers) {
    if (!IsHopByHop(name)) out.headers.emplace(name, value);
  }
  out.headers.emplace(kForwardedByHeader, options_.self);
  out.body = request.body;
  {
    std::lock_guard lock(flight_mu_);
    in_flight_.emplace(url, &client);
  }
  httplib::Result got = client.send(out);
  {
    std::lock_guard lock(flight_mu_);
    in_flight_.erase({url, &client});
  }
  Sent sent;
  if (!got) {
    // A handshake the leader's certificate failed delivered nothing either.
    sent.delivered = got.error() != httplib::Error::Connection &&
                     got.error() != httplib::Error::SSLConnection &&
                     got.error() != httplib::Error::SSLServerVerification;
    sent.error = protocol::DescribeRequestFailure(url, options_.trust, peer.get(), got.error(),
                                                  client.get_openssl_verify_result());
    return sent;
  }
  NativeResponse answer;
  answer.http_status = got->status;
  answer.body = std::move(got->body);
  for (const auto& [name, value] : got->headers) {
    // The front end writes its own framing and request id.
    if (IsHopByHop(name) || SameName(name, "x-amzn-requestid")) continue;
    if (SameName(name, "content-type")) {
      answer.content_type = value;
    } else {
      answer.headers.emplace_back(name, value);
    }
  }
  sent.delivered = true;
  sent.response = std::move(answer);
  return sent;
}

}  // namespace carve::app
