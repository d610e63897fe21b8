#include "http/http_server.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/status.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <unordered_map>
#include <variant>

#include "aws/sigv4.h"
#include "http/authenticator.h"
#include "http/http_connection.h"
#include "http/http_internal.h"

namespace carve::http {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;
using boost::system::error_code;
using internal::ErrorBody;
using internal::Incoming;
using internal::kAmzJson;

std::string RawRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return v;
  }
  return "";
}

namespace internal {

// Request ids only need to be unique, not unpredictable: a per-thread generator seeded once from
// the system's entropy avoids a RAND_bytes call (and its fork check, a getpid()) per request.
std::string NewRequestId() {
  thread_local std::mt19937_64 gen = [] {
    std::random_device rd;
    std::seed_seq seed{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seed);
  }();
  unsigned char b[16];
  const uint64_t hi = gen();
  const uint64_t lo = gen();
  std::memcpy(b, &hi, sizeof hi);
  std::memcpy(b + 8, &lo, sizeof lo);
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // RFC 4122 version 4.
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  std::string hex = aws::sigv4::HexEncode(std::string_view(reinterpret_cast<char*>(b), sizeof b));
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

std::string ErrorBody(const std::string& type, const std::string& message) {
  // Messages quote the request (its path, its target): invalid UTF-8 must not throw.
  return nlohmann::json{{"__type", type}, {"message", message}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

NativeResponse ParseFailure(const error_code& ec, size_t max_body_bytes) {
  if (ec == http::error::body_limit) {
    return NativeResponse{
        413,
        ErrorBody("RequestEntityTooLarge", "the request body exceeds the server's limit of " +
                                               std::to_string(max_body_bytes) + " bytes"),
        kAmzJson};
  }
  if (ec == http::error::header_limit) {
    return NativeResponse{
        431,
        ErrorBody("RequestHeaderFieldsTooLarge",
                  "the request headers exceed " + std::to_string(kHeaderLimitBytes) + " bytes"),
        kAmzJson};
  }
  return NativeResponse{400, ErrorBody("BadRequest", "malformed HTTP request: " + ec.message()),
                        kAmzJson};
}

NativeResponse TooManyHeaderFields(size_t fields) {
  return NativeResponse{
      431,
      ErrorBody("RequestHeaderFieldsTooLarge", "the request has " + std::to_string(fields) +
                                                   " header fields; the limit is " +
                                                   std::to_string(kMaxHeaderFields)),
      kAmzJson};
}

void LoopGate::Post(std::function<void()> task) {
  std::lock_guard lock(mu_);
  if (loop_ != nullptr) asio::post(*loop_, std::move(task));
}

void LoopGate::Close() {
  std::lock_guard lock(mu_);
  loop_ = nullptr;
}

std::string SerializeHead(const NativeResponse& r, const std::string& request_id, bool keep_alive) {
  std::string out;
  out.reserve(256);
  out += "HTTP/1.1 ";
  out += std::to_string(r.http_status);
  out += ' ';
  out += http::obsolete_reason(static_cast<http::status>(r.http_status));
  out += "\r\nContent-Type: ";
  out += r.content_type;
  out += "\r\nx-amzn-RequestId: ";
  out += request_id;
  for (const auto& [name, value] : r.headers) {
    out += "\r\n";
    out += name;
    out += ": ";
    out += value;
  }
  if (r.stream) {
    out += "\r\nTransfer-Encoding: chunked";
  } else {
    out += "\r\nContent-Length: ";
    out += std::to_string(r.body.size());
  }
  if (!keep_alive) out += "\r\nConnection: close";
  out += "\r\n\r\n";
  return out;
}

}  // namespace internal

namespace {

std::string AsciiLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsOperationName(std::string_view op) {
  if (op.empty() || op.size() > 64) return false;
  for (char c : op) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) return false;
  }
  return std::isupper(static_cast<unsigned char>(op[0])) != 0;
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> out;
  size_t start = path.empty() || path[0] != '/' ? 0 : 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

struct Route {
  std::string method;
  std::vector<std::string> pattern;  // Segments; "{x}" captures one, a last "{x+}" the rest.
  std::string text;                  // The pattern as registered.
  Access access;
  NativeHandler handler;  // One of the two is set.
  AsyncHandler async_handler;
  bool on_loop = false;  // The async handler (and authentication) runs on the event loop.

  bool Match(const std::string& m, const std::vector<std::string>& segs,
             std::map<std::string, std::string>& params) const {
    // A last segment "{x+}" (API Gateway's greedy parameter) takes one or more segments.
    const bool greedy = !pattern.empty() && pattern.back().ends_with("+}");
    if (m != method) return false;
    if (greedy ? segs.size() < pattern.size() : segs.size() != pattern.size()) return false;
    std::map<std::string, std::string> captured;
    for (size_t i = 0; i < pattern.size(); ++i) {
      const std::string& p = pattern[i];
      if (greedy && i + 1 == pattern.size()) {
        std::string rest;
        for (size_t j = i; j < segs.size(); ++j) {
          rest += (j == i ? "" : "/") + aws::sigv4::UriDecode(segs[j], false);
        }
        captured[p.substr(1, p.size() - 3)] = std::move(rest);
      } else if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
        if (segs[i].empty()) return false;
        captured[p.substr(1, p.size() - 2)] = aws::sigv4::UriDecode(segs[i], false);
      } else if (p != segs[i]) {
        return false;
      }
    }
    params = std::move(captured);
    return true;
  }
};

std::multimap<std::string, std::string> ParseQuery(std::string_view raw) {
  std::multimap<std::string, std::string> out;
  while (!raw.empty()) {
    size_t amp = raw.find('&');
    std::string_view pair = raw.substr(0, amp);
    raw = amp == std::string_view::npos ? std::string_view() : raw.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    out.emplace(
        aws::sigv4::UriDecode(pair.substr(0, eq), true),
        eq == std::string_view::npos ? "" : aws::sigv4::UriDecode(pair.substr(eq + 1), true));
  }
  return out;
}

// Handlers run here: a fixed set of threads over one queue with a bound.
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Work(); });
  }
  ~WorkerPool() { Stop(); }
  bool Submit(std::function<void()> task, size_t max_queued) {
    {
      std::lock_guard lock(mu_);
      if (stopping_ || queue_.size() >= max_queued) return false;
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return true;
  }
  size_t queued() const {
    std::lock_guard lock(mu_);
    return queue_.size();
  }
  // Runs what is queued, then joins.
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // Guarded by mu_.
  bool stopping_ = false;                    // Guarded by mu_.
  std::vector<std::thread> threads_;
};

void SetCloseOnExec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// Raises the soft descriptor limit toward the hard one so `connections` fit; returns how many
// connections the limit allows.
int FitDescriptorLimit(int connections) {
  constexpr int kReserve = 256;  // The store, the agents' pipes, logs, the router's clients.
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return connections;
  const rlim_t want = static_cast<rlim_t>(connections) + kReserve;
  if (lim.rlim_cur < want) {
    rlimit raised = lim;
    raised.rlim_cur = std::min(want, lim.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  const rlim_t fits = lim.rlim_cur > kReserve ? lim.rlim_cur - kReserve : 0;
  return static_cast<int>(std::min<rlim_t>(fits, static_cast<rlim_t>(connections)));
}

}  // namespace

// One event-loop thread runs the acceptor and every connection (http_connection.h); handlers
// run on the WorkerPool and post their answers back to the loop. Stop() writes a byte to a pipe
// the loop reads, so it is async-signal-safe.
class HttpServer::Impl final : public internal::ConnectionHost {
  static_assert(std::atomic<bool>::is_always_lock_free, "Stop() must be async-signal-safe");

 public:
  Impl(HttpServerOptions options, const aws::Credentials& credentials, MetricsRegistry& metrics)
      : options_(std::move(options)),
        clock_(options_.clock != nullptr ? *options_.clock : SystemClock::Get()),
        auth_(options_, credentials, clock_),
        metrics_(metrics),
        requests_(metrics.AddCounter("carve_api_requests_total",
                                     "SageMaker API requests by operation and result code.",
                                     {"operation", "code"})),
        latency_(metrics.AddHistogram("carve_api_request_duration_seconds",
                                      "SageMaker API request latency by operation.",
                                      {"operation"})),
        open_(metrics.AddGauge("carve_http_connections", "Open HTTP connections.", {})),
        queued_(metrics.AddGauge("carve_http_requests_queued",
                                 "Requests waiting for a worker thread.", {})),
        refused_(metrics.AddCounter("carve_http_connections_refused_total",
                                    "Connections refused at accept, by reason.", {"reason"})),
        acceptor_(loop_),
        stop_reader_(loop_) {
    metrics.AddCollector(
        [this] { queued_.Set({}, static_cast<double>(pool_ ? pool_->queued() : 0)); });
  }

  ~Impl() override {
    gate_->Close();
    if (stop_w_ >= 0) ::close(stop_w_);
  }

  void AddApiHandler(std::string prefix, std::string service, ApiHandler h) {
    apis_.push_back({std::move(prefix), std::move(service), std::move(h)});
  }

  void AddRoute(std::string method, const std::string& pattern, Access access, NativeHandler h,
                AsyncHandler async, bool on_loop = false) {
    routes_.push_back(Route{std::move(method), SplitPath(pattern), pattern, access, std::move(h),
                            std::move(async), on_loop});
    any_on_loop_ = any_on_loop_ || on_loop;
  }

  // The built-in routes, then those added; POST / stands for every awsJson1.1 API.
  std::vector<RouteInfo> Routes() const {
    std::vector<RouteInfo> out{{"POST", "/", kForTenants},
                               {"GET", "/ping", kForAnyone},
                               {"GET", "/metrics", MetricsAccess()}};
    for (const Route& r : routes_) out.push_back({r.method, r.text, r.access});
    return out;
  }

  Access MetricsAccess() const {
    return options_.public_metrics ? kForAnyone
                                   : Access{Principal::kScraper | Principal::kOperator};
  }

  Result<int> Start(const std::string& host, int port) {
    if (started_) return FailedPrecondition("HttpServer::Start called twice");
    for (const Route& r : routes_) {
      if (r.access.serves.empty()) {
        return FailedPrecondition("route " + r.method + " " + r.text +
                                  " is registered for no principal: every route names whom it "
                                  "serves (http/principals.h)");
      }
    }
    if (options_.insecure_no_auth) {
      spdlog::warn(
          "--insecure-no-auth: SigV4 verification is OFF; every request acts as account "
          "{}. Do not expose this server.",
          options_.insecure_account_id);
    }
    max_connections_ = FitDescriptorLimit(options_.max_connections);
    if (max_connections_ < options_.max_connections) {
      spdlog::warn("the descriptor limit allows {} connections of the {} asked for",
                   max_connections_, options_.max_connections);
    }
    CARVE_ASSIGN_OR_RETURN(int bound, Listen(host, port));
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
      return Internal(std::string("cannot create the server's stop pipe: ") + std::strerror(errno));
    }
    stop_reader_.assign(pipe_fds[0]);
    stop_w_ = pipe_fds[1];
    pool_ = std::make_unique<WorkerPool>(options_.threads);
    started_ = true;
    work_.emplace(asio::make_work_guard(loop_));
    stop_reader_.async_wait(asio::posix::stream_descriptor::wait_read,
                            [this](const error_code&) { BeginStop(); });
    Accept();
    thread_ = std::thread([this] { loop_.run(); });
    return bound;
  }

  // Lock-free atomics and one write() only, so this is safe inside a signal handler.
  void Stop() {
    if (!started_ || stop_requested_.exchange(true)) return;
    const char byte = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_w_, &byte, 1);
  }

  void Wait() {
    std::lock_guard lock(join_mu_);
    if (thread_.joinable()) thread_.join();
    if (pool_) pool_->Stop();
  }

  // ---- ConnectionHost (loop thread, except Post and the Handle task) ----
  const HttpServerOptions& options() const override { return options_; }
  asio::io_context& loop() override { return loop_; }
  // True from the moment Stop() is called (a response being written then closes its connection).
  bool stopping() const override { return stop_requested_ || stopping_; }
  void Post(std::function<void()> task) override { asio::post(loop_, std::move(task)); }
  std::shared_ptr<internal::LoopGate> gate() override { return gate_; }
  bool RunOnWorker(std::function<void()> task) override {
    return pool_->Submit(std::move(task), static_cast<size_t>(options_.max_queued_requests));
  }
  bool Handle(Incoming in, std::string request_id, Responder respond,
              std::function<void()> taken_async) override {
    if (!Forwarding() && OnLoop(in)) {  // A hand-off route: no worker, no thread hop.
      Serve(in, request_id, respond, taken_async);
      return true;
    }
    return RunOnWorker([this, in = std::move(in), request_id = std::move(request_id),
                        respond = std::move(respond),
                        taken_async = std::move(taken_async)]() mutable {
      Serve(in, request_id, respond, taken_async);
    });
  }
  // Dispatches and answers, unless an async route took `respond`; a handler that throws gets
  // a 500.
  void Serve(Incoming& in, const std::string& request_id, Responder& respond,
             std::function<void()>& taken_async) {
    std::optional<NativeResponse> out;
    try {
      if (Forwarding()) out = forwarder_.forward(in);
      if (!out) out = Dispatch(in, request_id, respond, taken_async);
    } catch (const std::exception& e) {
      spdlog::error("{} {}: handler failed: {}", in.method, in.path, e.what());
      out = NativeResponse{
          500, ErrorBody("InternalFailure", "the server failed to process the request"), kAmzJson};
    }
    if (out) respond(std::move(*out));
  }
  bool Forwarding() const { return forwarder_.active && forwarder_.active(); }
  void SetForwarder(Forwarder f) { forwarder_ = std::move(f); }
  // Whether `in` is for a route whose handler runs on the loop.
  bool OnLoop(const Incoming& in) const {
    if (!any_on_loop_) return false;
    const auto segs = SplitPath(in.path);
    std::map<std::string, std::string> params;
    for (const Route& r : routes_) {
      if (r.Match(in.method, segs, params)) return r.on_loop;
    }
    return false;
  }

  void Closed(const void* connection) override {
    connections_.erase(connection);
    if (auto it = client_of_.find(connection); it != client_of_.end()) {
      if (--per_client_[it->second] == 0) per_client_.erase(it->second);
      client_of_.erase(it);
    }
    open_.Set({}, static_cast<double>(connections_.size()));
    MaybeFinish();
  }

 private:
  Result<int> Listen(const std::string& host, int port) {
    const std::string where = host + ":" + std::to_string(port);
    error_code ec;
    auto address = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
    if (ec) return Unavailable("cannot listen on " + where + ": not an IP address");
    tcp::endpoint endpoint(address, static_cast<uint16_t>(port));
    acceptor_.open(endpoint.protocol(), ec);
    // Close-on-exec, like every descriptor of the server: the agents fork copies, and a child
    // holding the listener would keep the port accepting after the server is gone.
    if (!ec) SetCloseOnExec(acceptor_.native_handle());
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    // A deep backlog: botocore opens up to 10 connections per client at once, and a fleet's
    // agents reconnect together after a restart.
    if (!ec) acceptor_.listen(4096, ec);
    if (ec) {
      error_code ignored;
      acceptor_.close(ignored);
      return Unavailable("cannot listen on " + where + ": " + ec.message() +
                         " (address in use or not local?)");
    }
    return acceptor_.local_endpoint().port();
  }

  void Accept() {
    acceptor_.async_accept([this](const error_code& ec, tcp::socket socket) {
      if (stopping_) return;
      if (ec) {
        // Out of descriptors: back off instead of spinning on a listener that stays readable.
        spdlog::warn("HTTP accept: {}; retrying in 50 ms", ec.message());
        auto timer = std::make_shared<asio::steady_timer>(loop_, std::chrono::milliseconds(50));
        timer->async_wait([this, timer](const error_code&) {
          if (!stopping_) Accept();
        });
        return;
      }
      error_code pec;
      const std::string client = socket.remote_endpoint(pec).address().to_string();
      if (static_cast<int>(connections_.size()) >= max_connections_) {
        RefuseConnection(std::move(socket), "max_connections",
                         "the server holds its maximum of " + std::to_string(max_connections_) +
                             " open connections; retry, or close idle ones");
      } else if (auto held = per_client_.find(client);
                 held != per_client_.end() && held->second >= options_.max_connections_per_client) {
        RefuseConnection(std::move(socket), "max_connections_per_client",
                         "client " + client + " already holds " +
                             std::to_string(options_.max_connections_per_client) +
                             " open connections, the most one client may; reuse or close them");
      } else {
        SetCloseOnExec(socket.native_handle());
        auto conn =
            std::make_shared<internal::Connection>(*this, std::move(socket), options_.tls.get());
        connections_.emplace(conn.get(), conn);
        client_of_.emplace(conn.get(), client);
        ++per_client_[client];
        open_.Set({}, static_cast<double>(connections_.size()));
        conn->Start();
      }
      Accept();
    });
  }

  // Over a connection cap: a 503 that says why, written without waiting, then close. An HTTPS
  // client could read it only after a handshake, which is what the cap saves: it is just closed.
  void RefuseConnection(tcp::socket socket, const std::string& reason, const std::string& message) {
    refused_.Increment({reason});
    error_code ec;
    if (options_.tls) {
      spdlog::debug("connection refused ({}): {}", reason, message);
      socket.close(ec);
      return;
    }
    const NativeResponse r{503, ErrorBody("ServiceUnavailable", message), kAmzJson};
    const std::string out = internal::SerializeHead(r, internal::NewRequestId(), false) + r.body;
    socket.non_blocking(true, ec);
    socket.write_some(asio::buffer(out), ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
  }

  void BeginStop() {
    spdlog::debug("HTTP front end stopping: {} connections open", connections_.size());
    stopping_ = true;
    error_code ec;
    acceptor_.close(ec);  // From here on new connections are refused.
    stop_reader_.close(ec);
    std::vector<std::shared_ptr<internal::Connection>> all;
    all.reserve(connections_.size());
    for (auto& [key, conn] : connections_) all.push_back(conn);
    for (auto& conn : all) conn->OnServerStop();
    MaybeFinish();
  }

  // Once stopping and every connection closed, the loop may end.
  void MaybeFinish() {
    if (stopping_) spdlog::debug("HTTP front end: {} connections left", connections_.size());
    if (stopping_ && connections_.empty()) work_.reset();
  }

  // The answer, or nullopt when an async route took `respond`.
  std::optional<NativeResponse> Dispatch(Incoming& in, const std::string& request_id,
                                         Responder& respond, std::function<void()>& taken_async) {
    if (in.method == "POST" && in.path == "/") return ServeApi(in, request_id);
    if (in.method == "GET" && in.path == "/ping") return NativeResponse{200, "", "text/plain"};
    if (in.method == "GET" && in.path == "/metrics") {
      NativeRequest nr;
      if (auto denied = auth_.Identify(MetricsAccess(), "GET /metrics", in, nr)) return denied;
      return NativeResponse{200, metrics_.Expose(), std::string(MetricsRegistry::kContentType)};
    }
    const auto segs = SplitPath(in.path);
    for (const Route& r : routes_) {
      NativeRequest nr;
      if (!r.Match(in.method, segs, nr.path_params)) continue;
      if (auto denied = auth_.Identify(r.access, r.method + " " + r.text, in, nr)) return denied;
      nr.method = in.method;
      nr.path = aws::sigv4::UriDecode(in.path, false);
      nr.query = ParseQuery(in.query);
      nr.body = std::move(in.body);
      nr.request_id = request_id;
      for (const auto& [name, value] : in.headers) nr.headers[AsciiLower(name)] = value;
      if (r.async_handler) {
        taken_async();
        r.async_handler(std::move(nr), std::move(respond));
        return std::nullopt;
      }
      return r.handler(nr);
    }
    return NativeResponse{
        404, ErrorBody("UnknownOperationException", "no route for " + in.method + " " + in.path)};
  }

  NativeResponse ServeApi(Incoming& in, const std::string& request_id) {
    const auto started = clock_.Now();
    std::string operation = "unknown";
    std::string code;
    NativeResponse res{200, "", kAmzJson};
    const std::string target = in.Header("X-Amz-Target");
    const std::string_view op(target);
    const ApiTarget* api = nullptr;
    std::string expected;
    for (const ApiTarget& t : apis_) {
      expected += (expected.empty() ? "" : " or ") + t.prefix + "<Operation>";
      if (op.starts_with(t.prefix) && IsOperationName(op.substr(t.prefix.size()))) {
        api = &t;
        operation = std::string(op.substr(t.prefix.size()));
      }
    }
    // Each service's requests are signed for it; an unknown target is checked as SageMaker's.
    auto account = auth_.Authenticate(in, api != nullptr ? api->service : "sagemaker");
    if (auto* denied = std::get_if<NativeResponse>(&account)) {
      res = std::move(*denied);
      code = res.headers.back().second;
      operation = "unknown";
    } else if (api != nullptr) {
      ApiResponse out =
          api->handler(ApiRequest{operation, in.body.empty() ? "{}" : std::move(in.body),
                                  std::get<Authenticator::Caller>(account).account_id, request_id});
      res.http_status = out.http_status;
      if (!out.error_type.empty()) res.headers.emplace_back("X-Amzn-Errortype", out.error_type);
      res.body = std::move(out.body);
      code = out.error_type.empty() ? std::to_string(out.http_status) : out.error_type;
      // Unknown names stay out of the operation label so it keeps a bounded cardinality.
      if (out.error_type == "UnknownOperationException") operation = "unknown";
    } else {
      operation = "unknown";
      res.http_status = 400;
      code = "UnknownOperationException";
      res.headers.emplace_back("X-Amzn-Errortype", code);
      res.body = ErrorBody(code, target.empty() ? "Missing X-Amz-Target header"
                                                : "Operation '" + target +
                                                      "' is not supported; expected "
                                                      "X-Amz-Target: " +
                                                      expected);
    }
    const double seconds = std::chrono::duration<double>(clock_.Now() - started).count();
    requests_.Increment({operation, code});
    latency_.Observe({operation}, seconds);
    return res;
  }

  const HttpServerOptions options_;
  const Clock& clock_;
  Authenticator auth_;
  MetricsRegistry& metrics_;
  Counter& requests_;
  Histogram& latency_;
  Gauge& open_;
  Gauge& queued_;
  Counter& refused_;
  struct ApiTarget {
    std::string prefix;   // X-Amz-Target prefix, with the dot.
    std::string service;  // The SigV4 service its requests are signed for.
    ApiHandler handler;
  };
  std::vector<ApiTarget> apis_;  // Set before Start; read-only afterwards.
  std::vector<Route> routes_;    // Set before Start; read-only afterwards.
  bool any_on_loop_ = false;     // Some route runs on the loop (set with routes_).
  Forwarder forwarder_;          // Set before Start; read-only afterwards.
  asio::io_context loop_{1};
  std::shared_ptr<internal::LoopGate> gate_ = std::make_shared<internal::LoopGate>(loop_);
  tcp::acceptor acceptor_;
  asio::posix::stream_descriptor stop_reader_;  // The stop pipe's read end, on the loop.
  int stop_w_ = -1;                             // Its write end, written by Stop().
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::unique_ptr<WorkerPool> pool_;
  int max_connections_ = 0;
  std::atomic<bool> started_{false};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> stopping_{false};  // Set on the loop; read by workers too.
  // Every open connection, by address; loop thread only.
  std::unordered_map<const void*, std::shared_ptr<internal::Connection>> connections_;
  // Each open connection's client address, and how many each address holds; loop thread only.
  std::unordered_map<const void*, std::string> client_of_;
  std::unordered_map<std::string, int> per_client_;
  std::mutex join_mu_;
  std::thread thread_;  // The loop. Guarded by join_mu_ after Start.
};

HttpServer::HttpServer(HttpServerOptions options, const aws::Credentials& credentials,
                       MetricsRegistry& metrics)
    : impl_(std::make_unique<Impl>(std::move(options), credentials, metrics)) {}

HttpServer::~HttpServer() {
  impl_->Stop();
  impl_->Wait();
}

void HttpServer::SetApiHandler(ApiHandler handler) {
  impl_->AddApiHandler("SageMaker.", "sagemaker", std::move(handler));
}

void HttpServer::AddApiHandler(std::string target_prefix, std::string signing_service,
                               ApiHandler handler) {
  impl_->AddApiHandler(std::move(target_prefix), std::move(signing_service), std::move(handler));
}

std::vector<RouteInfo> HttpServer::Routes() const { return impl_->Routes(); }

void HttpServer::AddRoute(std::string method, const std::string& pattern, Access access,
                          NativeHandler handler) {
  impl_->AddRoute(std::move(method), pattern, access, std::move(handler), nullptr);
}

void HttpServer::AddAsyncRoute(std::string method, const std::string& pattern, Access access,
                               AsyncHandler handler, AsyncRouteRuns runs) {
  impl_->AddRoute(std::move(method), pattern, access, nullptr, std::move(handler),
                  runs == AsyncRouteRuns::kOnLoop);
}

void HttpServer::SetForwarder(Forwarder forwarder) { impl_->SetForwarder(std::move(forwarder)); }

Result<int> HttpServer::Start(const std::string& host, int port) {
  return impl_->Start(host, port);
}
void HttpServer::Stop() { impl_->Stop(); }
void HttpServer::Wait() { impl_->Wait(); }

}  // namespace carve::http
