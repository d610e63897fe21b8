#include "server/http_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <variant>

#include "aws/sigv4.h"
#include "server/fd_stream.h"

namespace carve::server {

namespace {

constexpr std::string_view kTargetPrefix = "SageMaker.";
constexpr const char* kAmzJson = "application/x-amz-json-1.1";
// Request line plus headers. botocore's signed requests carry well under 2 KiB.
constexpr uint32_t kHeaderLimitBytes = 64 * 1024;
constexpr size_t kReadBufferBytes = size_t{16} * 1024;

namespace http = boost::beast::http;
using boost::system::error_code;

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
        captured[p.substr(1, p.size() - 2)] = aws::sigv4::UriDecode(segs[i], false);
      } else if (p != segs[i]) {
        return false;
      }
    }
    params = std::move(captured);
    return true;
  }
};

// One request as read off the wire.
struct Incoming {
  std::string method;
  std::string path;   // Raw (still percent-encoded), without the query.
  std::string query;  // Raw, without '?'.
  std::vector<std::pair<std::string, std::string>> headers;  // Names as sent.
  std::string body;

  std::string Header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return v;
    }
    return "";
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

// The answer to a request Beast could not read, or nullopt when the peer simply went away.
std::optional<NativeResponse> ReadFailure(const error_code& ec, size_t max_body_bytes) {
  if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
      ec == boost::asio::error::eof || ec == boost::asio::error::timed_out ||
      ec == boost::asio::error::connection_reset) {
    return std::nullopt;
  }
  if (ec == http::error::body_limit) {
    return NativeResponse{
        413, ErrorBody("RequestEntityTooLarge", "the request body exceeds the server's limit of " +
                                                    std::to_string(max_body_bytes) + " bytes")};
  }
  if (ec == http::error::header_limit) {
    return NativeResponse{431, ErrorBody("RequestHeaderFieldsTooLarge",
                                         "the request headers exceed " +
                                             std::to_string(kHeaderLimitBytes) + " bytes")};
  }
  if (ec.category() == boost::system::system_category()) return std::nullopt;  // Socket error.
  return NativeResponse{400, ErrorBody("BadRequest", "malformed HTTP request: " + ec.message())};
}

}  // namespace

// Threads: one acceptor, and `threads` workers that each serve one connection at a time, reading
// requests with Beast's parser and writing each response with one sendmsg() (FdStream). Stop()
// writes a byte to a pipe that the acceptor and every idle worker poll next to their socket, so
// idle keep-alive connections close at once rather than after keep_alive_timeout.
class HttpServer::Impl {
  static_assert(std::atomic<bool>::is_always_lock_free, "Stop() must be async-signal-safe");

 public:
  Impl(HttpServerOptions options, const aws::Credentials& credentials, MetricsRegistry& metrics)
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

  ~Impl() {
    for (int fd : {listen_fd_, stop_r_, stop_w_}) {
      if (fd >= 0) ::close(fd);
    }
  }

  void SetApiHandler(ApiHandler h) { api_ = std::move(h); }

  void AddRoute(std::string method, const std::string& pattern, RouteAuth auth, NativeHandler h) {
    routes_.push_back(Route{std::move(method), SplitPath(pattern), auth, std::move(h)});
  }

  Result<int> Start(const std::string& host, int port) {
    if (started_) return FailedPrecondition("HttpServer::Start called twice");
    if (options_.insecure_no_auth) {
      spdlog::warn(
          "--insecure-no-auth: SigV4 verification is OFF; every request acts as account "
          "{}. Do not expose this server.",
          options_.insecure_account_id);
    }
    CARVE_ASSIGN_OR_RETURN(int bound, Listen(host, port));
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
      return Internal(std::string("cannot create the server's stop pipe: ") + std::strerror(errno));
    }
    stop_r_ = pipe_fds[0];
    stop_w_ = pipe_fds[1];
    started_ = true;
    thread_ = std::thread([this] { Run(); });
    return bound;
  }

  // Lock-free atomics and one write() only, so this is safe inside a signal handler. The pipe
  // stays readable, which wakes the acceptor and every idle worker.
  void Stop() {
    if (!started_ || stopped_.exchange(true)) return;
    const char byte = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_w_, &byte, 1);
  }

  void Wait() {
    std::lock_guard lock(join_mu_);
    if (thread_.joinable()) thread_.join();
  }

 private:
  // Binds (SO_REUSEADDR only: never SO_REUSEPORT, so a port in use fails) and listens with a
  // deep backlog (botocore opens up to 10 connections per client at once). Returns the port.
  Result<int> Listen(const std::string& host, int port) {
    const std::string where = host + ":" + std::to_string(port);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port_text = std::to_string(port);
    if (int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found); rc != 0) {
      return Unavailable("cannot listen on " + where + ": " + ::gai_strerror(rc));
    }
    std::string cause = "no address";
    for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
      int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      int yes = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 4096) == 0) {
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
        ::freeaddrinfo(found);
        listen_fd_ = fd;
        return ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                                : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
      }
      cause = std::strerror(errno);
      ::close(fd);
    }
    ::freeaddrinfo(found);
    return Unavailable("cannot listen on " + where + ": " + cause +
                       " (address in use or not local?)");
  }

  void Run() {
    const int threads = std::max(1, options_.threads);
    std::vector<std::thread> workers;
    workers.reserve(threads);
    for (int i = 0; i < threads; ++i) workers.emplace_back([this] { Work(); });
    Accept();
    ::close(std::exchange(listen_fd_, -1));  // From here on new connections are refused.
    {
      std::lock_guard lock(queue_mu_);
      closing_ = true;
    }
    queue_cv_.notify_all();
    for (auto& t : workers) t.join();
  }

  void Accept() {
    for (;;) {
      pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_r_, POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        spdlog::error("HTTP accept loop: poll failed: {}", std::strerror(errno));
        return;
      }
      if (p[1].revents != 0) return;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        // Out of descriptors: back off instead of spinning on a listener that stays readable.
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          spdlog::warn("HTTP accept: {}; retrying in 50 ms", std::strerror(errno));
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        continue;
      }
      {
        std::lock_guard lock(queue_mu_);
        pending_.push_back(fd);
      }
      queue_cv_.notify_one();
    }
  }

  void Work() {
    for (;;) {
      int fd;
      {
        std::unique_lock lock(queue_mu_);
        queue_cv_.wait(lock, [&] { return !pending_.empty() || closing_; });
        if (pending_.empty()) return;
        fd = pending_.front();
        pending_.pop_front();
      }
      Serve(FdStream(fd));
    }
  }

  // Serves requests on one connection until the client closes it, it idles past the keep-alive
  // timeout, a request cannot be read, or the server stops (after finishing the request in
  // progress, answered with Connection: close).
  void Serve(FdStream stream) {
    stream.set_read_timeout(options_.read_timeout);
    stream.set_write_timeout(options_.read_timeout);
    boost::beast::flat_buffer buffer;
    // Beast reads at most the buffer's free capacity (512 bytes to start): room for a whole signed
    // request keeps it to one readv().
    buffer.reserve(kReadBufferBytes);
    for (;;) {
      if (buffer.size() == 0 &&
          stream.WaitReadable(options_.keep_alive_timeout, stop_r_) != FdStream::Wait::kReadable) {
        return;
      }
      http::request_parser<http::string_body> parser;
      parser.header_limit(kHeaderLimitBytes);
      parser.body_limit(options_.max_body_bytes);
      error_code ec;
      http::read_header(stream, buffer, parser, ec);
      if (!ec && !parser.is_done() &&
          strcasecmp(std::string(parser.get()[http::field::expect]).c_str(), "100-continue") == 0) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        boost::asio::write(stream, boost::asio::buffer(kContinue.data(), kContinue.size()), ec);
      }
      if (!ec) http::read(stream, buffer, parser, ec);
      if (ec) {
        if (auto reply = ReadFailure(ec, options_.max_body_bytes)) {
          Write(stream, *reply, NewRequestId(), false);
        }
        return;
      }
      http::request<http::string_body>& msg = parser.get();
      Incoming in;
      in.method = std::string(msg.method_string());
      std::string_view target = msg.target();
      size_t q = target.find('?');
      in.path = std::string(target.substr(0, q));
      if (q != std::string_view::npos) in.query = std::string(target.substr(q + 1));
      in.headers.reserve(16);
      for (const auto& field : msg) {
        in.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      }
      in.body = std::move(msg.body());
      const std::string request_id = NewRequestId();
      NativeResponse out;
      try {
        out = Dispatch(in, request_id);
      } catch (const std::exception& e) {
        spdlog::error("{} {}: handler failed: {}", in.method, in.path, e.what());
        out = NativeResponse{
            500, ErrorBody("InternalFailure", "the server failed to process the request"),
            kAmzJson};
      }
      // Checked after the handler: a Stop() while it ran still closes this connection.
      const bool keep_alive = msg.keep_alive() && !stopped_.load();
      if (!Write(stream, out, request_id, keep_alive) || !keep_alive) return;
    }
  }

  // Writes one response: headers and body in one sendmsg(), or headers then one chunk per
  // StreamWriter call for a streamed body. False when the client is gone.
  static bool Write(FdStream& stream, NativeResponse& out, const std::string& request_id,
                    bool keep_alive) {
    error_code ec;
    if (out.stream) {
      http::response<http::empty_body> res;
      SetHead(res, out, request_id, keep_alive);
      res.chunked(true);
      http::response_serializer<http::empty_body> head(res);
      http::write_header(stream, head, ec);
      if (ec) return false;
      bool broken = false;
      out.stream([&](std::string_view chunk) {
        if (broken) return false;
        if (chunk.empty()) return true;  // An empty chunk would end the body.
        boost::asio::write(stream,
                           http::make_chunk(boost::asio::buffer(chunk.data(), chunk.size())), ec);
        broken = static_cast<bool>(ec);
        return !broken;
      });
      if (broken) return false;
      boost::asio::write(stream, http::make_chunk_last(), ec);
      return !ec;
    }
    http::response<http::string_body> res;
    SetHead(res, out, request_id, keep_alive);
    res.body() = std::move(out.body);
    res.prepare_payload();
    http::write(stream, res, ec);
    return !ec;
  }

  template <class Body>
  static void SetHead(http::response<Body>& res, const NativeResponse& out,
                      const std::string& request_id, bool keep_alive) {
    res.version(11);
    res.result(static_cast<unsigned>(out.http_status));
    res.set(http::field::content_type, out.content_type);
    res.set("x-amzn-RequestId", request_id);
    for (const auto& [name, value] : out.headers) res.insert(name, value);
    res.keep_alive(keep_alive);
  }

  // Returns the account id, or the 403 to send.
  std::variant<std::string, NativeResponse> Authenticate(Incoming& in) {
    if (options_.insecure_no_auth) return options_.insecure_account_id;
    aws::SigV4Request sr;
    sr.method = in.method;
    sr.path = in.path;
    sr.query = in.query;
    sr.headers = std::move(in.headers);  // Lent for verification, handed back below.
    sr.body = std::move(in.body);
    aws::AuthOutcome outcome = verifier_.Verify(sr);
    in.headers = std::move(sr.headers);
    in.body = std::move(sr.body);
    if (auto* caller = std::get_if<aws::VerifiedCaller>(&outcome)) return caller->account_id;
    const auto& f = std::get<aws::AuthFailure>(outcome);
    NativeResponse res{f.http_status, ErrorBody(f.type, f.message), kAmzJson};
    res.headers.emplace_back("X-Amzn-Errortype", f.type);
    return res;
  }

  NativeResponse Dispatch(Incoming& in, const std::string& request_id) {
    if (in.method == "POST" && in.path == "/") return ServeApi(in, request_id);
    if (in.method == "GET" && in.path == "/ping") return NativeResponse{200, "", "text/plain"};
    if (in.method == "GET" && in.path == "/metrics") {
      return NativeResponse{200, metrics_.Expose(), std::string(MetricsRegistry::kContentType)};
    }
    const auto segs = SplitPath(in.path);
    for (const Route& r : routes_) {
      NativeRequest nr;
      if (!r.Match(in.method, segs, nr.path_params)) continue;
      if (r.auth == RouteAuth::kSigV4) {
        auto account = Authenticate(in);
        if (auto* denied = std::get_if<NativeResponse>(&account)) return std::move(*denied);
        nr.account_id = std::get<std::string>(std::move(account));
      }
      nr.method = in.method;
      nr.path = aws::sigv4::UriDecode(in.path, false);
      nr.query = ParseQuery(in.query);
      nr.body = std::move(in.body);
      nr.request_id = request_id;
      for (const auto& [name, value] : in.headers) nr.headers[AsciiLower(name)] = value;
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
    auto account = Authenticate(in);
    if (auto* denied = std::get_if<NativeResponse>(&account)) {
      res = std::move(*denied);
      code = res.headers.back().second;
    } else {
      const std::string target = in.Header("X-Amz-Target");
      std::string_view op(target);
      if (op.substr(0, kTargetPrefix.size()) == kTargetPrefix &&
          IsOperationName(op.substr(kTargetPrefix.size())) && api_) {
        operation = std::string(op.substr(kTargetPrefix.size()));
        ApiResponse out = api_(ApiRequest{operation, in.body.empty() ? "{}" : std::move(in.body),
                                          std::get<std::string>(account), request_id});
        res.http_status = out.http_status;
        if (!out.error_type.empty()) res.headers.emplace_back("X-Amzn-Errortype", out.error_type);
        res.body = std::move(out.body);
        code = out.error_type.empty() ? std::to_string(out.http_status) : out.error_type;
        // Unknown names stay out of the operation label so it keeps a bounded cardinality.
        if (out.error_type == "UnknownOperationException") operation = "unknown";
      } else {
        res.http_status = 400;
        code = "UnknownOperationException";
        res.headers.emplace_back("X-Amzn-Errortype", code);
        res.body = ErrorBody(code, target.empty() ? "Missing X-Amz-Target header"
                                                  : "Operation '" + target +
                                                        "' is not supported; expected "
                                                        "X-Amz-Target: SageMaker.<Operation>");
      }
    }
    const double seconds = std::chrono::duration<double>(clock_.Now() - started).count();
    requests_.Increment({operation, code});
    latency_.Observe({operation}, seconds);
    return res;
  }

  const HttpServerOptions options_;
  const Clock& clock_;
  const aws::SigV4Verifier verifier_;
  MetricsRegistry& metrics_;
  Counter& requests_;
  Histogram& latency_;
  ApiHandler api_;             // Set before Start; read-only afterwards.
  std::vector<Route> routes_;  // Set before Start; read-only afterwards.
  int listen_fd_ = -1;         // Owned by the acceptor after Start.
  int stop_r_ = -1;            // Stop pipe; read end polled, write end written by Stop().
  int stop_w_ = -1;
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<int> pending_;  // Accepted connections not yet served. Guarded by queue_mu_.
  bool closing_ = false;     // Acceptor finished. Guarded by queue_mu_.
  std::mutex join_mu_;
  std::thread thread_;  // Guarded by join_mu_ after Start.
};

HttpServer::HttpServer(HttpServerOptions options, const aws::Credentials& credentials,
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
