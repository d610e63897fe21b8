#include "server/http_server.h"

#include <httplib.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include "server/sigv4.h"

namespace carve::server {

namespace {

constexpr std::string_view kTargetPrefix = "SageMaker.";
constexpr const char* kAmzJson = "application/x-amz-json-1.1";

std::string NewRequestId() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) {
    // Not security-relevant; fall back to a process-local sequence rather than failing.
    static std::atomic<uint64_t> seq{0};
    uint64_t n = ++seq;
    std::memcpy(b, &n, sizeof n);
    std::memset(b + 8, 0, 8);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // RFC 4122 version 4.
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  std::string hex = sigv4::HexEncode(std::string_view(reinterpret_cast<char*>(b), sizeof b));
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

std::string ErrorBody(const std::string& type, const std::string& message) {
  return nlohmann::json{{"__type", type}, {"message", message}}.dump();
}

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
  std::vector<std::string> pattern;  // Segments; "{x}" captures.
  RouteAuth auth;
  NativeHandler handler;

  bool Match(const std::string& m, const std::vector<std::string>& segs,
             std::map<std::string, std::string>& params) const {
    if (m != method || segs.size() != pattern.size()) return false;
    std::map<std::string, std::string> captured;
    for (size_t i = 0; i < segs.size(); ++i) {
      const std::string& p = pattern[i];
      if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
        if (segs[i].empty()) return false;
        captured[p.substr(1, p.size() - 2)] = httplib::detail::decode_url(segs[i], false);
      } else if (p != segs[i]) {
        return false;
      }
    }
    params = std::move(captured);
    return true;
  }
};

}  // namespace

class HttpServer::Impl {
  static_assert(std::atomic<bool>::is_always_lock_free, "Stop() must be async-signal-safe");

 public:
  Impl(HttpServerOptions options, const Credentials& credentials, MetricsRegistry& metrics)
      : options_(std::move(options)),
        clock_(options_.clock != nullptr ? *options_.clock : SystemClock::Get()),
        verifier_(credentials, clock_, options_.signing_service, options_.max_clock_skew),
        metrics_(metrics),
        requests_(metrics.AddCounter("carve_api_requests_total",
                                     "SageMaker API requests by operation and result code.",
                                     {"operation", "code"})),
        latency_(metrics.AddHistogram("carve_api_request_duration_seconds",
                                      "SageMaker API request latency by operation.",
                                      {"operation"})) {}

  void SetApiHandler(ApiHandler h) { api_ = std::move(h); }

  void AddRoute(std::string method, const std::string& pattern, RouteAuth auth, NativeHandler h) {
    routes_.push_back(Route{std::move(method), SplitPath(pattern), auth, std::move(h)});
  }

  Result<int> Start(const std::string& host, int port) {
    if (options_.insecure_no_auth) {
      spdlog::warn(
          "--insecure-no-auth: SigV4 verification is OFF; every request acts as account "
          "{}. Do not expose this server.",
          options_.insecure_account_id);
    }
    const int threads = std::max(1, options_.threads);
    svr_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    svr_.set_keep_alive_max_count(100000);
    // Headers and body are separate writes; without TCP_NODELAY the second waits for the
    // client's delayed ACK (up to 40 ms on Linux). Streams need each chunk sent at once too.
    svr_.set_tcp_nodelay(true);
    svr_.set_keep_alive_timeout(options_.keep_alive_timeout.count());
    svr_.set_payload_max_length(options_.max_body_bytes);
    auto dispatch = [this](const httplib::Request& req, httplib::Response& res) {
      Dispatch(req, res);
    };
    svr_.Get(".*", dispatch);
    svr_.Post(".*", dispatch);
    svr_.Put(".*", dispatch);
    svr_.Delete(".*", dispatch);
    svr_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
          res.status = 500;
          res.set_content(ErrorBody("InternalFailure", "the server failed to process the request"),
                          kAmzJson);
        });
    // Only SO_REUSEADDR (never SO_REUSEPORT: a port in use must fail to bind), and remember the
    // listening socket so its backlog can be raised below.
    svr_.set_socket_options([this](int sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      listen_fd_ = sock;
    });
    int bound =
        port == 0 ? svr_.bind_to_any_port(host) : (svr_.bind_to_port(host, port) ? port : -1);
    if (bound <= 0) {
      return Unavailable("cannot listen on " + host + ":" + std::to_string(port) +
                         " (address in use or not local?)");
    }
    // cpp-httplib 0.11 listens with a backlog of 5; a burst of new connections (botocore opens
    // up to 10 per client) overflows that and stalls clients. listen() again only resizes it.
    if (listen_fd_ >= 0) ::listen(listen_fd_, 4096);
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    // Wait until the accept loop runs so that a Stop() from now on cannot be lost.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!svr_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!svr_.is_running()) return Internal("HTTP accept loop did not start within 10 s");
    started_ = true;
    return bound;
  }

  // Lock-free atomics and cpp-httplib's stop() (shutdown + close of the listening socket) only,
  // so this is safe inside a signal handler. The exchange makes a second signal a no-op
  // (cpp-httplib asserts on a second stop while its loop is still unwinding).
  void Stop() {
    if (!started_ || stopped_.exchange(true)) return;
    svr_.stop();
  }

  void Wait() {
    std::lock_guard lock(join_mu_);
    if (thread_.joinable()) thread_.join();
  }

 private:
  // The path and query of the request as received (still percent-encoded).
  static std::pair<std::string, std::string> RawTarget(const httplib::Request& req) {
    const std::string& t = req.target.empty() ? req.path : req.target;
    size_t q = t.find('?');
    if (q == std::string::npos) return {t, ""};
    return {t.substr(0, q), t.substr(q + 1)};
  }

  // Returns the account id, or writes the 403 and returns nullopt.
  std::optional<std::string> Authenticate(const httplib::Request& req, httplib::Response& res) {
    if (options_.insecure_no_auth) return options_.insecure_account_id;
    SigV4Request sr;
    sr.method = req.method;
    std::tie(sr.path, sr.query) = RawTarget(req);
    for (const auto& [name, value] : req.headers) {
      // cpp-httplib adds these itself; they were never on the wire.
      if (name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" ||
          name == "LOCAL_PORT") {
        continue;
      }
      sr.headers.emplace_back(name, value);
    }
    sr.body = req.body;
    AuthOutcome outcome = verifier_.Verify(sr);
    if (auto* caller = std::get_if<VerifiedCaller>(&outcome)) return caller->account_id;
    const auto& f = std::get<AuthFailure>(outcome);
    res.status = f.http_status;
    res.set_header("X-Amzn-Errortype", f.type);
    res.set_content(ErrorBody(f.type, f.message), kAmzJson);
    return std::nullopt;
  }

  void Dispatch(const httplib::Request& req, httplib::Response& res) {
    const std::string request_id = NewRequestId();
    res.set_header("x-amzn-RequestId", request_id);
    if (req.method == "POST" && req.path == "/") return ServeApi(req, res, request_id);
    if (req.method == "GET" && req.path == "/ping") return res.set_content("", "text/plain");
    if (req.method == "GET" && req.path == "/metrics") {
      return res.set_content(metrics_.Expose(), MetricsRegistry::kContentType);
    }
    const auto segs = SplitPath(RawTarget(req).first);
    for (const Route& r : routes_) {
      NativeRequest nr;
      if (!r.Match(req.method, segs, nr.path_params)) continue;
      if (r.auth == RouteAuth::kSigV4) {
        auto account = Authenticate(req, res);
        if (!account) return;
        nr.account_id = *account;
      }
      nr.method = req.method;
      nr.path = req.path;
      for (const auto& [k, v] : req.params) nr.query.emplace(k, v);
      nr.body = req.body;
      nr.request_id = request_id;
      for (const auto& [name, value] : req.headers) nr.headers[AsciiLower(name)] = value;
      NativeResponse out = r.handler(nr);
      res.status = out.http_status;
      for (const auto& [name, value] : out.headers) res.set_header(name, value);
      if (out.stream) return StreamBody(res, std::move(out));
      res.set_content(out.body, out.content_type);
      return;
    }
    res.status = 404;
    res.set_content(
        ErrorBody("UnknownOperationException", "no route for " + req.method + " " + req.path),
        "application/json");
  }

  // Sends the body through a chunked content provider that runs the handler's stream function
  // once; cpp-httplib writes each chunk to the socket as it is written.
  static void StreamBody(httplib::Response& res, NativeResponse out) {
    auto stream = std::make_shared<std::function<void(const StreamWriter&)>>(std::move(out.stream));
    res.set_chunked_content_provider(
        out.content_type, [stream](size_t, httplib::DataSink& sink) {
          (*stream)([&sink](std::string_view chunk) {
            return sink.is_writable() && sink.write(chunk.data(), chunk.size());
          });
          sink.done();
          return true;
        });
  }

  void ServeApi(const httplib::Request& req, httplib::Response& res,
                const std::string& request_id) {
    const auto started = clock_.Now();
    std::string operation = "unknown";
    std::string code;
    auto account = Authenticate(req, res);
    if (!account) {
      code = res.get_header_value("X-Amzn-Errortype");
    } else {
      const std::string target = req.get_header_value("X-Amz-Target");
      std::string_view op(target);
      if (op.substr(0, kTargetPrefix.size()) == kTargetPrefix &&
          IsOperationName(op.substr(kTargetPrefix.size())) && api_) {
        operation = std::string(op.substr(kTargetPrefix.size()));
        ApiResponse out =
            api_(ApiRequest{operation, req.body.empty() ? "{}" : req.body, *account, request_id});
        res.status = out.http_status;
        if (!out.error_type.empty()) res.set_header("X-Amzn-Errortype", out.error_type);
        res.set_content(out.body, kAmzJson);
        code = out.error_type.empty() ? std::to_string(out.http_status) : out.error_type;
        // Unknown names stay out of the operation label so it keeps a bounded cardinality.
        if (out.error_type == "UnknownOperationException") operation = "unknown";
      } else {
        res.status = 400;
        code = "UnknownOperationException";
        res.set_header("X-Amzn-Errortype", code);
        res.set_content(
            ErrorBody(code, target.empty() ? "Missing X-Amz-Target header"
                                           : "Operation '" + target +
                                                 "' is not supported; "
                                                 "expected X-Amz-Target: SageMaker.<Operation>"),
            kAmzJson);
      }
    }
    const double seconds = std::chrono::duration<double>(clock_.Now() - started).count();
    requests_.Increment({operation, code});
    latency_.Observe({operation}, seconds);
  }

  const HttpServerOptions options_;
  const Clock& clock_;
  const SigV4Verifier verifier_;
  MetricsRegistry& metrics_;
  Counter& requests_;
  Histogram& latency_;
  ApiHandler api_;             // Set before Start; read-only afterwards.
  std::vector<Route> routes_;  // Set before Start; read-only afterwards.
  httplib::Server svr_;
  std::atomic<int> listen_fd_{-1};  // The listening socket, recorded while binding.
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
  std::mutex join_mu_;
  std::thread thread_;  // Guarded by join_mu_ after Start.
};

HttpServer::HttpServer(HttpServerOptions options, const Credentials& credentials,
                       MetricsRegistry& metrics)
    : impl_(std::make_unique<Impl>(std::move(options), credentials, metrics)) {}

HttpServer::~HttpServer() {
  impl_->Stop();
  impl_->Wait();
}

void HttpServer::SetApiHandler(ApiHandler handler) { impl_->SetApiHandler(std::move(handler)); }

void HttpServer::AddRoute(std::string method, const std::string& pattern, RouteAuth auth,
                          NativeHandler handler) {
  impl_->AddRoute(std::move(method), pattern, auth, std::move(handler));
}

Result<int> HttpServer::Start(const std::string& host, int port) {
  return impl_->Start(host, port);
}
void HttpServer::Stop() { impl_->Stop(); }
void HttpServer::Wait() { impl_->Wait(); }

}  // namespace carve::server
