#include "runtime/copy_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdlib>
#include <optional>
#include <thread>
#include <utility>

#include "http/fd_stream.h"

namespace carve::runtime {

namespace beast = boost::beast;
using boost::system::error_code;

namespace {

// An idle connection older than this is closed rather than reused: servers drop idle keep-alive
// connections after a few seconds (cpp-httplib and uvicorn after 5 s), and a request written
// into one that is being closed fails.
constexpr auto kMaxIdle = std::chrono::seconds(2);
// Largest answer body buffered for Call (a streamed 2xx body is not buffered).
constexpr uint64_t kMaxBufferedBodyBytes = uint64_t{1} << 30;
constexpr size_t kReadChunkBytes = size_t{16} * 1024;

CopyOutcome ReadFailureOutcome(const error_code& ec) {
  return ec == boost::asio::error::timed_out ? CopyOutcome::kTimedOut : CopyOutcome::kBroken;
}

// A reused connection that the copy closed while it sat idle fails this way before any byte of
// an answer; the request never reached the copy, so it is resent on a fresh connection.
bool IsStaleConnection(const error_code& ec) {
  return ec == beast::http::error::end_of_stream || ec == boost::asio::error::eof ||
         ec == boost::asio::error::connection_reset || ec == boost::asio::error::broken_pipe;
}

template <typename Conn>
using IdlePools = std::map<std::string, std::vector<std::unique_ptr<Conn>>>;

// The most recently used idle connection to `address` that is younger than kMaxIdle; the older
// ones it passes go to `expired`. The caller holds the pools' lock.
template <typename Conn>
std::unique_ptr<Conn> TakeFresh(IdlePools<Conn>& idle, const std::string& address,
                                std::vector<std::unique_ptr<Conn>>& expired) {
  const auto now = std::chrono::steady_clock::now();
  auto it = idle.find(address);
  if (it == idle.end()) return nullptr;
  auto& pool = it->second;
  while (!pool.empty()) {
    std::unique_ptr<Conn> conn = std::move(pool.back());
    pool.pop_back();
    if (now - conn->idle_since < kMaxIdle) return conn;
    expired.push_back(std::move(conn));
  }
  return nullptr;
}

// Keeps `conn` for reuse unless `address` already has `max` idle. The caller holds the lock.
template <typename Conn>
void Park(IdlePools<Conn>& idle, const std::string& address, std::unique_ptr<Conn> conn,
          size_t max) {
  conn->idle_since = std::chrono::steady_clock::now();
  auto& pool = idle[address];
  if (pool.size() < max) pool.push_back(std::move(conn));
}

}  // namespace

struct CopyClient::Loop {
  boost::asio::io_context io{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  boost::asio::ip::tcp::resolver resolver{io};
  std::thread thread{[this] { io.run(); }};
  void Stop() {
    work.reset();
    io.stop();
    if (thread.joinable()) thread.join();
  }
};

struct CopyClient::AsyncConnection {
  explicit AsyncConnection(boost::asio::io_context& io) : stream(io) {}
  boost::asio::ip::tcp::socket stream;
  boost::beast::flat_buffer buffer;
  std::chrono::steady_clock::time_point idle_since;
};

struct CopyClient::Connection {
  http::FdStream stream;
  boost::beast::flat_buffer buffer;  // Bytes read past the previous answer (none when pooled).
  std::chrono::steady_clock::time_point idle_since;
};

std::string_view CopyOutcomeName(CopyOutcome outcome) {
  switch (outcome) {
    case CopyOutcome::kOk:
      return "ok";
    case CopyOutcome::kConnectFailed:
      return "connect failed";
    case CopyOutcome::kTimedOut:
      return "timed out";
    case CopyOutcome::kBroken:
      return "connection broken";
    case CopyOutcome::kAborted:
      return "aborted";
  }
  return "unknown";
}

CopyClient::CopyClient(std::chrono::milliseconds connect_timeout, size_t max_idle_per_address)
    : connect_timeout_(connect_timeout), max_idle_per_address_(max_idle_per_address) {}

CopyClient::~CopyClient() {
  if (loop_ == nullptr) return;
  loop_->Stop();
  async_idle_.clear();  // Their sockets belong to the loop's io_context.
  loop_.reset();
}

std::unique_ptr<CopyClient::Connection> CopyClient::TakeIdle(const std::string& address) {
  std::vector<std::unique_ptr<Connection>> expired;  // Closed outside the lock.
  std::lock_guard lock(mu_);
  return TakeFresh(idle_, address, expired);
}

void CopyClient::Return(const std::string& address, std::unique_ptr<Connection> conn) {
  std::lock_guard lock(mu_);
  Park(idle_, address, std::move(conn), max_idle_per_address_);
}

void CopyClient::Forget(const std::string& address) {
  std::vector<std::unique_ptr<Connection>> drop;
  std::vector<std::unique_ptr<AsyncConnection>> drop_async;
  std::lock_guard lock(mu_);  // Closing an idle socket touches no other state.
  if (auto it = idle_.find(address); it != idle_.end()) {
    drop = std::move(it->second);
    idle_.erase(it);
  }
  if (auto it = async_idle_.find(address); it != async_idle_.end()) {
    drop_async = std::move(it->second);
    async_idle_.erase(it);
  }
}

CopyReply CopyClient::Call(const std::string& address, const CopyRequest& request) {
  return Send(address, request, nullptr, nullptr);
}

CopyReply CopyClient::Stream(const std::string& address, const CopyRequest& request,
                             const std::function<bool(const CopyReply&)>& on_headers,
                             const std::function<bool(std::string_view)>& on_data) {
  return Send(address, request, &on_headers, &on_data);
}

CopyReply CopyClient::Send(const std::string& address, const CopyRequest& request,
                           const std::function<bool(const CopyReply&)>* on_headers,
                           const std::function<bool(std::string_view)>* on_data) {
  // span_body points at the caller's body: nothing is copied, and headers and body leave in one
  // sendmsg().
  beast::http::request<beast::http::span_body<const char>> req{beast::http::verb::post,
                                                               request.path, 11};
  req.set(beast::http::field::host, address);
  req.set(beast::http::field::content_type,
          request.content_type.empty() ? "application/octet-stream" : request.content_type);
  if (!request.accept.empty()) req.set(beast::http::field::accept, request.accept);
  if (!request.custom_attributes.empty()) {
    req.set("X-Amzn-SageMaker-Custom-Attributes", request.custom_attributes);
  }
  req.keep_alive(true);
  req.body() = boost::beast::span<const char>(request.body.data(), request.body.size());
  req.prepare_payload();

  CopyReply reply;
  std::unique_ptr<Connection> conn = TakeIdle(address);
  bool reused = conn != nullptr;
  std::optional<beast::http::response_parser<beast::http::buffer_body>> parser;
  error_code ec;
  for (;;) {
    parser.emplace();
    if (!conn) {
      conn = std::make_unique<Connection>();
      conn->buffer.reserve(kReadChunkBytes);  // Beast reads at most the free capacity.
      conn->stream = http::FdStream::Connect(address, connect_timeout_, ec);
      if (ec) {
        reply.outcome = CopyOutcome::kConnectFailed;
        reply.detail = ec.message();
        return reply;
      }
    }
    conn->stream.set_read_timeout(request.timeout);
    conn->stream.set_write_timeout(request.timeout);
    beast::http::write(conn->stream, req, ec);
    // The answer cannot be there yet: wait for it first instead of a read that would fail with
    // EAGAIN (one system call fewer per request).
    if (!ec && conn->stream.WaitReadable(request.timeout, -1) == http::FdStream::Wait::kTimedOut) {
      ec = boost::asio::error::timed_out;
    }
    if (!ec) beast::http::read_header(conn->stream, conn->buffer, *parser, ec);
    if (!ec) break;
    if (reused && IsStaleConnection(ec)) {
      conn.reset();
      reused = false;
      continue;
    }
    reply.outcome = ReadFailureOutcome(ec);
    reply.detail = ec.message();
    return reply;
  }

  const auto& head = parser->get();
  reply.status = static_cast<int>(head.result_int());
  reply.content_type = std::string(head[beast::http::field::content_type]);
  reply.custom_attributes = std::string(head["X-Amzn-SageMaker-Custom-Attributes"]);
  const bool streaming = on_data != nullptr && reply.status >= 200 && reply.status < 300;
  if (on_headers != nullptr && !(*on_headers)(reply)) {
    reply.outcome = CopyOutcome::kAborted;
    reply.detail = "the caller stopped reading";
    return reply;
  }
  parser->body_limit(kMaxBufferedBodyBytes);
  char chunk[kReadChunkBytes];
  while (!parser->is_done()) {
    parser->get().body().data = chunk;
    parser->get().body().size = sizeof chunk;
    beast::http::read_some(conn->stream, conn->buffer, *parser, ec);
    if (ec == beast::http::error::need_buffer) ec = {};
    if (ec) {
      reply.outcome = ReadFailureOutcome(ec);
      reply.detail = ec.message();
      return reply;
    }
    const size_t n = sizeof chunk - parser->get().body().size;
    if (n == 0) continue;
    if (!streaming) {
      reply.body.append(chunk, n);
    } else if (!(*on_data)(std::string_view(chunk, n))) {
      reply.outcome = CopyOutcome::kAborted;
      reply.detail = "the caller stopped reading";
      return reply;  // The connection is dropped: the rest of the answer is still coming.
    }
  }
  if (parser->get().keep_alive() && conn->buffer.size() == 0) Return(address, std::move(conn));
  return reply;
}

std::unique_ptr<CopyClient::AsyncConnection> CopyClient::TakeIdleAsync(const std::string& address) {
  std::vector<std::unique_ptr<AsyncConnection>> expired;  // Closed outside the lock.
  std::lock_guard lock(mu_);
  return TakeFresh(async_idle_, address, expired);
}

void CopyClient::ReturnAsync(const std::string& address, std::unique_ptr<AsyncConnection> conn) {
  std::lock_guard lock(mu_);
  Park(async_idle_, address, std::move(conn), max_idle_per_address_);
}

// One AsyncCall: connect (or reuse), write, read the header and then the body, under one
// deadline for the answer (Call's is per read; for a unary answer the difference is a body that
// keeps trickling past the timeout, which AsyncCall cuts). Lives in the handlers it
// hands the loop (shared_from_this), and runs only on the loop's thread.
class CopyClient::Exchange : public std::enable_shared_from_this<CopyClient::Exchange> {
 public:
  Exchange(CopyClient& client, std::string address, CopyRequest request,
           std::function<void(CopyReply)> done)
      : client_(client),
        address_(std::move(address)),
        request_(std::move(request)),
        done_(std::move(done)) {
    req_ = {beast::http::verb::post, request_.path, 11};
    req_.set(beast::http::field::host, address_);
    req_.set(beast::http::field::content_type,
             request_.content_type.empty() ? "application/octet-stream" : request_.content_type);
    if (!request_.accept.empty()) req_.set(beast::http::field::accept, request_.accept);
    if (!request_.custom_attributes.empty()) {
      req_.set("X-Amzn-SageMaker-Custom-Attributes", request_.custom_attributes);
    }
    req_.keep_alive(true);
    req_.body() = boost::beast::span<const char>(request_.body.data(), request_.body.size());
    req_.prepare_payload();
  }

  // One deadline at a time for the whole exchange (a timer per operation costs system calls on
  // every request): the connect within connect_timeout, then the answer within the request's
  // timeout. On expiry the socket is closed and the pending operation fails.
  void Start() {
    conn_ = client_.TakeIdleAsync(address_);
    reused_ = conn_ != nullptr;
    if (conn_) {
      rearmed_ = true;
      Arm(request_.timeout);
      return Write();
    }
    Arm(client_.connect_timeout_);
    Connect();
  }

 private:
  void Arm(std::chrono::milliseconds timeout) {
    timer_.expires_after(timeout);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (ec || self->finished_) return;  // Cancelled: the exchange ended or moved on.
      self->expired_ = true;
      if (self->conn_) self->conn_->stream.close();
    });
  }

  void Connect() {
    conn_ = std::make_unique<AsyncConnection>(client_.loop_->io);
    const size_t colon = address_.rfind(':');
    if (colon == std::string::npos) return Fail(CopyOutcome::kConnectFailed, "no port in address");
    auto connected = [self = shared_from_this()](const error_code& ec) {
      if (ec) {
        return self->Fail(CopyOutcome::kConnectFailed,
                          self->expired_ ? "connect timed out" : ec.message());
      }
      if (!self->rearmed_) {  // The answer's deadline, once connected.
        self->rearmed_ = true;
        self->Arm(self->request_.timeout);
      }
      self->Write();
    };
    error_code bad;
    auto ip = boost::asio::ip::make_address(address_.substr(0, colon), bad);
    const int port = std::atoi(address_.c_str() + colon + 1);
    if (!bad && port > 0 && port < 65536) {  // Copies are numeric addresses: no resolver thread.
      conn_->stream.async_connect({ip, static_cast<uint16_t>(port)}, std::move(connected));
      return;
    }
    client_.loop_->resolver.async_resolve(
        address_.substr(0, colon), address_.substr(colon + 1),
        [self = shared_from_this(), connected = std::move(connected)](
            const error_code& ec, boost::asio::ip::tcp::resolver::results_type results) mutable {
          if (ec) return self->Fail(CopyOutcome::kConnectFailed, ec.message());
          boost::asio::async_connect(
              self->conn_->stream, results,
              [connected = std::move(connected)](const error_code& ec2,
                                                 const boost::asio::ip::tcp::endpoint&) {
                connected(ec2);
              });
        });
  }

  void Write() {
    parser_.emplace();
    parser_->body_limit(kMaxBufferedBodyBytes);
    beast::http::async_write(conn_->stream, req_,
                             [self = shared_from_this()](const error_code& ec, size_t) {
                               if (ec) return self->Retry(ec);
                               self->ReadHeader();
                             });
  }

  void ReadHeader() {
    beast::http::async_read_header(
        conn_->stream, conn_->buffer, *parser_,
        [self = shared_from_this()](const error_code& ec, size_t) {
          if (ec) return self->Retry(ec);
          const auto& head = self->parser_->get();
          self->reply_.status = static_cast<int>(head.result_int());
          self->reply_.content_type = std::string(head[beast::http::field::content_type]);
          self->reply_.custom_attributes = std::string(head["X-Amzn-SageMaker-Custom-Attributes"]);
          self->ReadBody();
        });
  }

  // A reused connection the copy closed while idle fails before any byte of an answer: the
  // request never reached the copy's handler, so it goes again on a fresh connection, once.
  void Retry(const error_code& ec) {
    if (reused_ && !expired_ && IsStaleConnection(ec)) {
      reused_ = false;
      return Connect();
    }
    Fail(ec);
  }

  void ReadBody() {
    if (parser_->is_done()) return Done();
    beast::http::async_read_some(conn_->stream, conn_->buffer, *parser_,
                                 [self = shared_from_this()](const error_code& ec, size_t) {
                                   if (ec) return self->Fail(ec);
                                   self->ReadBody();
                                 });
  }

  void Done() {
    reply_.body = std::move(parser_->get().body());
    if (parser_->get().keep_alive() && conn_->buffer.size() == 0) {
      client_.ReturnAsync(address_, std::move(conn_));
    }
    Finish();
  }

  void Fail(const error_code& ec) {
    Fail(expired_ ? CopyOutcome::kTimedOut : CopyOutcome::kBroken,
         expired_ ? "timed out" : ec.message());
  }
  void Fail(CopyOutcome outcome, std::string detail) {
    reply_.outcome = outcome;
    reply_.detail = std::move(detail);
    conn_.reset();
    Finish();
  }
  void Finish() {
    finished_ = true;
    timer_.cancel();
    auto done = std::move(done_);
    done(std::move(reply_));
  }

  CopyClient& client_;
  const std::string address_;
  const CopyRequest request_;
  std::function<void(CopyReply)> done_;
  beast::http::request<beast::http::span_body<const char>> req_;
  std::unique_ptr<AsyncConnection> conn_;
  bool reused_ = false;
  bool rearmed_ = false;  // The answer's deadline is set (after the connect's).
  bool expired_ = false;  // The deadline passed: a failure now is a timeout.
  bool finished_ = false;
  boost::asio::steady_timer timer_{client_.loop_->io};
  std::optional<beast::http::response_parser<beast::http::string_body>> parser_;
  CopyReply reply_;
};

void CopyClient::AsyncCall(const std::string& address, CopyRequest request,
                           std::function<void(CopyReply)> done) {
  std::call_once(loop_started_, [this] { loop_ = std::make_unique<Loop>(); });
  auto exchange = std::make_shared<Exchange>(*this, address, std::move(request), std::move(done));
  boost::asio::post(loop_->io, [exchange] { exchange->Start(); });
}

}  // namespace carve::runtime
