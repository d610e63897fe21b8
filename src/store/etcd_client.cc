#include "store/etcd_client.h"

#include <httplib.h>

#include <algorithm>
#include <thread>

#include "store/etcd_json.h"

namespace carve::store {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

void SetTimeouts(httplib::Client& c, std::chrono::milliseconds connect,
                 std::chrono::milliseconds io) {
  const auto secs = [](std::chrono::milliseconds d) {
    return std::chrono::duration_cast<std::chrono::seconds>(d);
  };
  const auto usecs = [&](std::chrono::milliseconds d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d - secs(d)).count();
  };
  c.set_connection_timeout(secs(connect).count(), usecs(connect));
  c.set_read_timeout(secs(io).count(), usecs(io));
  c.set_write_timeout(secs(io).count(), usecs(io));
  // cpp-httplib writes the headers and the body apart; with Nagle's algorithm the body waits
  // for the peer's delayed ACK, 40 ms a request on Linux.
  c.set_tcp_nodelay(true);
}

// An error answer of the gateway: {"error":M,"message":M,"code":GRPC_CODE}. 5xx answers mean this
// member cannot serve the call now (no leader, a timed-out proposal, shutting down): another
// may, and a write may have been proposed before it failed.
struct GatewayError {
  Error error;
  bool transient = false;
  bool maybe_applied = false;  // A write it refused may still have been applied (NOSPACE).
};

GatewayError ParseGatewayError(std::string_view rpc, int http_status, const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::string message = text;
  int code = -1;
  if (j.is_object()) {
    if (j.contains("message") && j["message"].is_string()) message = j["message"];
    if (j.contains("code") && j["code"].is_number_integer()) code = j["code"];
  }
  const std::string what = "etcd " + std::string(rpc) + ": " + message;
  if (http_status >= 500) return {Unavailable(what), true};
  switch (code) {
    case 5:
      return {NotFound(what)};
    case 9:   // FailedPrecondition
    case 11:  // OutOfRange: a compacted or future revision.
      return {FailedPrecondition(what)};
    case 8:  // ResourceExhausted: a request over the gRPC limit, or the NOSPACE alarm.
      if (message.find("database space exceeded") != std::string::npos) {
        // etcd applies the write that crosses the quota and then answers NOSPACE
        // (quotaApplierV3), so the caller must look before it says nothing was written.
        return {
            Unavailable(what + " (etcd's space quota is exhausted and it raised its NOSPACE alarm: "
                               "compact, defragment and disarm it, as docs/ha.md describes)"),
            false, true};
      }
      return {InvalidArgument(what)};
    case 7:   // PermissionDenied
    case 16:  // Unauthenticated
      return {FailedPrecondition(what + " (check the client certificate etcd expects)")};
    default:
      return {InvalidArgument(what + " (HTTP " + std::to_string(http_status) + ")")};
  }
}

// One POST: the status (0 when none came), the body as far as it came, and how it ended.
struct Exchange {
  int status = 0;
  std::string body;
  httplib::Error error = httplib::Error::Success;
};

Exchange Send(httplib::Client& client, const std::string& path, const std::string& body) {
  Exchange x;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.response_handler = [&](const httplib::Response& res) {
    x.status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    x.body.append(data, len);
    return true;
  };
  httplib::Response res;
  client.send(req, res, x.error);
  return x;
}

}  // namespace

struct EtcdClient::Pool {
  std::mutex mu;
  std::vector<std::unique_ptr<httplib::Client>> idle;  // Guarded by mu.
};

Result<EtcdUrl> ParseEtcdUrl(std::string_view url) {
  EtcdUrl out;
  std::string_view rest;
  if (url.starts_with("etcd://")) {
    rest = url.substr(7);
  } else if (url.starts_with("etcds://")) {
    rest = url.substr(8);
    out.tls = true;
  } else {
    return InvalidArgument("store URL '" + std::string(url) +
                           "' must start with etcd:// or, for TLS, etcds:// "
                           "(etcd://HOST:PORT,HOST:PORT[/PREFIX])");
  }
  const size_t slash = rest.find('/');
  out.prefix = slash == std::string_view::npos ? "/carve" : std::string(rest.substr(slash));
  rest = rest.substr(0, slash);
  while (out.prefix.size() > 1 && out.prefix.back() == '/') out.prefix.pop_back();
  if (out.prefix == "/") {
    return InvalidArgument("store URL '" + std::string(url) +
                           "': the key prefix must not be the whole keyspace (give e.g. /carve)");
  }
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view member = rest.substr(0, comma);
    const size_t colon = member.rfind(':');
    const std::string_view port = colon == std::string_view::npos ? "" : member.substr(colon + 1);
    if (colon == 0 || port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(std::string(port)) == 0 || std::stoi(std::string(port)) > 65535) {
      return InvalidArgument("store URL '" + std::string(url) + "': member '" +
                             std::string(member) + "' is not HOST:PORT with a port in 1-65535");
    }
    out.endpoints.emplace_back(member);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
    if (rest.empty()) {
      return InvalidArgument("store URL '" + std::string(url) + "' ends its member list with ','");
    }
  }
  if (out.endpoints.empty()) {
    return InvalidArgument("store URL '" + std::string(url) + "' names no etcd member");
  }
  return out;
}

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

EtcdClient::EtcdClient(EtcdClientOptions options) : options_(std::move(options)) {
  for (size_t i = 0; i < options_.endpoints.size(); ++i) pools_.push_back(std::make_unique<Pool>());
}

EtcdClient::~EtcdClient() { CancelStreams(); }

std::string EtcdClient::current_endpoint() const {
  if (options_.endpoints.empty()) return "";
  return options_.endpoints[current_.load() % options_.endpoints.size()];
}

std::unique_ptr<httplib::Client> EtcdClient::Connect(size_t member) const {
  return NewClient(options_.endpoints[member], options_.request_timeout);
}

std::unique_ptr<httplib::Client> EtcdClient::NewClient(const std::string& endpoint,
                                                       std::chrono::milliseconds io) const {
  const EtcdTls& tls = options_.tls;
  std::unique_ptr<httplib::Client> c;
  if (!tls.enabled) {
    c = std::make_unique<httplib::Client>("http://" + endpoint);
  } else {
    c = tls.cert_file.empty()
            ? std::make_unique<httplib::Client>("https://" + endpoint)
            : std::make_unique<httplib::Client>("https://" + endpoint, tls.cert_file, tls.key_file);
    if (!tls.ca_file.empty()) c->set_ca_cert_path(tls.ca_file);
    c->enable_server_certificate_verification(true);
  }
  SetTimeouts(*c, options_.connect_timeout, io);
  c->set_keep_alive(true);
  return c;
}

std::unique_ptr<httplib::Client> EtcdClient::Borrow(size_t member) {
  Pool& pool = *pools_[member];
  {
    std::lock_guard lock(pool.mu);
    if (!pool.idle.empty()) {
      auto c = std::move(pool.idle.back());
      pool.idle.pop_back();
      return c;
    }
  }
  return Connect(member);
}

void EtcdClient::Return(size_t member, std::unique_ptr<httplib::Client> client) {
  Pool& pool = *pools_[member];
  std::lock_guard lock(pool.mu);
  pool.idle.push_back(std::move(client));
}

EtcdReply EtcdClient::Call(std::string_view rpc, const json& request, EtcdCall kind) {
  const size_t members = options_.endpoints.size();
  if (members == 0) return {Unavailable("etcd: no endpoints configured")};
  const std::string path = "/v3/" + std::string(rpc);
  const std::string body = request.dump();
  const auto deadline = Clock::now() + options_.request_timeout;
  std::string last_failure;
  for (size_t attempt = 0;; ++attempt) {
    const size_t member = current_.load() % members;
    const std::string& endpoint = options_.endpoints[member];
    auto client = Borrow(member);
    Exchange x = Send(*client, path, body);
    if (x.status != 0) {
      // Error answers are chunked with a gRPC trailer that cpp-httplib 0.11 cannot parse, so
      // the exchange counts as answered once the status line and the body came.
      if (x.error == httplib::Error::Success) Return(member, std::move(client));
      if (x.status == 200 && x.error == httplib::Error::Success) {
        json parsed = json::parse(x.body, nullptr, /*allow_exceptions=*/false);
        if (parsed.is_discarded() || !parsed.is_object()) {
          return {Internal("etcd " + std::string(rpc) + " at " + endpoint +
                           " answered something that is not a JSON object")};
        }
        return {std::move(parsed)};
      }
      GatewayError e = ParseGatewayError(rpc, x.status, x.body);
      if (x.status == 200)
        e = {Unavailable("etcd " + std::string(rpc) + ": the answer broke off"), true};
      if (!e.transient) {
        if (e.maybe_applied && kind == EtcdCall::kWrite) {
          return {std::move(e.error), /*outcome_unknown=*/true, /*worth_resending=*/false};
        }
        return {std::move(e.error)};
      }
      if (kind == EtcdCall::kWrite) return {std::move(e.error), /*outcome_unknown=*/true};
      last_failure = endpoint + ": " + e.error.message;
    } else {
      last_failure = endpoint + ": " + httplib::to_string(x.error);
      // Only a refused or timed-out connect proves the request never left.
      if (kind == EtcdCall::kWrite && x.error != httplib::Error::Connection) {
        return {Unavailable("etcd " + std::string(rpc) + " at " + last_failure +
                            " after the request was sent; it may have been applied"),
                /*outcome_unknown=*/true};
      }
    }
    size_t expected = member;  // Move on, unless another caller already has.
    current_.compare_exchange_strong(expected, (member + 1) % members);
    // Every member gets one try even past the deadline: a member that timed out must not
    // keep the call from the others.
    const auto now = Clock::now();
    if (now >= deadline && attempt + 1 >= members) break;
    if ((attempt + 1) % members == 0) {  // Every member failed once: back off a little.
      const auto round = static_cast<int>((attempt + 1) / members);
      std::this_thread::sleep_for(std::min<Clock::duration>(
          std::chrono::milliseconds(std::min(50 * round, 500)),
          std::max<Clock::duration>(deadline - now, Clock::duration::zero())));
    }
  }
  return {Unavailable("etcd: no member of " + Join(options_.endpoints) + " answered " +
                      std::string(rpc) + " within " +
                      std::to_string(options_.request_timeout.count()) +
                      " ms (last: " + last_failure + ")")};
}

Result<json> EtcdClient::Read(std::string_view rpc, const json& request) {
  return Call(rpc, request, EtcdCall::kRead).body;
}

Status EtcdClient::Stream(const json& create_request,
                          const std::function<bool(const json&)>& on_message,
                          std::chrono::milliseconds idle_timeout) {
  const size_t members = options_.endpoints.size();
  if (members == 0) return Unavailable("etcd: no endpoints configured");
  const size_t member = current_.load() % members;
  auto client = NewClient(options_.endpoints[member], idle_timeout);
  {
    std::lock_guard lock(streams_mu_);
    if (cancelled_) return Unavailable("etcd: the client is shutting down");
    streams_.push_back(client.get());
  }
  int status = 0;
  bool ended_by_caller = false;
  std::string buffer;
  std::string failure;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v3/watch";
  req.body = json{{"create_request", create_request}}.dump();
  req.set_header("Content-Type", "application/json");
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  // The gateway writes each stream message as one JSON object and a newline.
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    buffer.append(data, len);
    if (status != 200)
      return buffer.size() < size_t{64} * 1024;  // An error body, read whole below.
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
      const json message = json::parse(buffer.substr(0, nl), nullptr, false);
      buffer.erase(0, nl + 1);
      if (!message.is_object()) {
        failure = "a stream message that is not a JSON object";
        return false;
      }
      if (message.contains("error")) {
        failure = message["error"].value("message", message["error"].dump());
        return false;
      }
      if (!on_message(message.value("result", json::object()))) {
        ended_by_caller = true;
        return false;
      }
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  client->send(req, res, error);
  {
    std::lock_guard lock(streams_mu_);
    std::erase(streams_, client.get());
  }
  if (ended_by_caller) return OkStatus();
  const std::string& endpoint = options_.endpoints[member];
  if (status != 200 && status != 0)
    failure = ParseGatewayError("watch", status, buffer).error.message;
  if (failure.empty()) failure = httplib::to_string(error);
  if (status == 0) {
    size_t expected = member;
    current_.compare_exchange_strong(expected, (member + 1) % members);
  }
  return Unavailable("etcd watch at " + endpoint + " ended: " + failure);
}

void EtcdClient::CancelStreams() {
  std::lock_guard lock(streams_mu_);
  cancelled_ = true;
  for (httplib::Client* c : streams_) c->stop();
}

Result<int64_t> EtcdClient::LeaseGrant(std::chrono::seconds ttl) {
  EtcdReply r = Call("lease/grant", json{{"TTL", std::to_string(ttl.count())}}, EtcdCall::kWrite);
  // A grant whose outcome is unknown may have made a lease nobody holds; it expires by itself.
  CARVE_ASSIGN_OR_RETURN(json body, std::move(r.body));
  const int64_t id = JsonInt(body, "ID");
  if (id == 0) return Internal("etcd lease/grant answered no lease ID");
  return id;
}

Result<int64_t> EtcdClient::LeaseKeepAlive(int64_t lease) {
  // A bidirectional stream in gRPC; through the gateway one request object gets one answer and
  // the response ends with the request body.
  CARVE_ASSIGN_OR_RETURN(json body, Read("lease/keepalive", json{{"ID", std::to_string(lease)}}));
  const int64_t ttl = JsonInt(body.value("result", json::object()), "TTL");
  if (ttl <= 0) return NotFound("etcd lease " + std::to_string(lease) + " has expired");
  return ttl;
}

Status EtcdClient::LeaseRevoke(int64_t lease) {
  EtcdReply r = Call("lease/revoke", json{{"ID", std::to_string(lease)}}, EtcdCall::kWrite);
  if (!r.body.has_value() && r.body.error().code != ErrorCode::kNotFound) return r.body.error();
  return OkStatus();  // Revoked now, or already gone.
}

Result<std::vector<EtcdMember>> EtcdClient::MemberList() {
  CARVE_ASSIGN_OR_RETURN(json body, Read("cluster/member/list", json::object()));
  std::vector<EtcdMember> out;
  for (const json& m : body.value("members", json::array())) {
    EtcdMember member;
    member.id = JsonInt<uint64_t>(m, "ID");
    member.name = m.value("name", "");
    for (const json& u : m.value("clientURLs", json::array())) {
      if (u.is_string()) member.client_urls.push_back(u.get<std::string>());
    }
    out.push_back(std::move(member));
  }
  return out;
}

Status EtcdClient::Health(const std::string& endpoint) {
  auto c = NewClient(endpoint, std::min(options_.request_timeout, std::chrono::milliseconds(2000)));
  httplib::Result r = c->Get("/health");
  if (!r) return Unavailable("etcd member " + endpoint + ": " + httplib::to_string(r.error()));
  const json j = json::parse(r->body, nullptr, false);
  if (r->status == 200 && j.is_object() && j.value("health", "") == "true") return OkStatus();
  return Unavailable("etcd member " + endpoint + " is unhealthy: " + r->body);
}

}  // namespace carve::store
