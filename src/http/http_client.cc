#include "http/http_client.h"

#include <strings.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <charconv>

namespace carve::http {

namespace beast = boost::beast;
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// Largest answer body buffered (a streamed 2xx body is not buffered).
constexpr uint64_t kMaxBufferedBodyBytes = uint64_t{1} << 30;
constexpr size_t kReadChunkBytes = size_t{16} * 1024;
constexpr char kStoppedReading[] = "the caller stopped reading";

// A reused connection that the peer closed while it sat idle fails this way before any byte of
// an answer; the request never reached the peer, so it is resent on a fresh connection.
bool IsStaleConnection(const error_code& ec) {
  return ec == beast::http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe;
}

}  // namespace

std::string_view ClientOutcomeName(ClientOutcome outcome) {
  switch (outcome) {
    case ClientOutcome::kOk:
      return "ok";
    case ClientOutcome::kConnectFailed:
      return "connect failed";
    case ClientOutcome::kTimedOut:
      return "timed out";
    case ClientOutcome::kBroken:
      return "connection broken";
    case ClientOutcome::kAborted:
      return "aborted";
  }
  return "unknown";
}

std::string ClientReply::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() && ::strncasecmp(key.data(), name.data(), name.size()) == 0) {
      return value;
    }
  }
  return "";
}

struct HttpClient::Connection {
  explicit Connection(asio::io_context& io) : socket(io) {}
  asio::ip::tcp::socket socket;
  beast::flat_buffer buffer;  // Bytes read past the previous answer (none when pooled).
  std::chrono::steady_clock::time_point idle_since;
};

// One request, from connect (or a pooled connection) to the last byte of its answer. Lives in
// the handlers it hands the loop (and in a Stream handle), and runs only on the loop's thread.
class HttpClient::Exchange final : public HttpClient::Handle,
                                   public std::enable_shared_from_this<HttpClient::Exchange> {
 public:
  Exchange(HttpClient& client, std::string address, ClientRequest request,
           std::function<void(ClientReply)> done, std::shared_ptr<StreamSink> sink)
      : client_(client),
        address_(std::move(address)),
        request_(std::move(request)),
        done_(std::move(done)),
        sink_(std::move(sink)) {
    const auto verb = beast::http::string_to_verb(request_.method);
    req_ = {verb == beast::http::verb::unknown ? beast::http::verb::post : verb, request_.target,
            11};
    req_.set(beast::http::field::host, address_);
    bool typed = false;
    for (const auto& [name, value] : request_.headers) {
      if (::strcasecmp(name.c_str(), "host") == 0) {
        req_.set(beast::http::field::host, value);  // A signed request's own.
        continue;
      }
      req_.insert(name, value);
      typed = typed || ::strcasecmp(name.c_str(), "content-type") == 0;
    }
    if (!typed && !request_.body.empty()) {
      req_.set(beast::http::field::content_type, "application/octet-stream");
    }
    req_.keep_alive(true);
    // span_body points at the request's own body: nothing is copied.
    req_.body() = beast::span<const char>(request_.body.data(), request_.body.size());
    req_.prepare_payload();
  }

  // The deadline is one timer per exchange: the connect within connect_timeout, then the
  // answer within the request's timeout (a stream's: each read). On expiry the socket closes
  // and the pending operation fails.
  void Begin() {
    conn_ = client_.TakeIdle(address_);
    reused_ = conn_ != nullptr;
    if (conn_) {
      answering_ = true;
      Arm(request_.timeout);
      return Write();
    }
    Arm(client_.options_.connect_timeout);
    Connect();
  }

  void Resume() override {
    asio::post(client_.io_, [self = shared_from_this()] {
      if (!self->paused_ || self->finished_) return;
      self->paused_ = false;
      self->ReadBody();
    });
  }

  void Cancel() override {
    asio::post(client_.io_, [self = shared_from_this()] {
      if (self->finished_) return;
      self->cancelled_ = true;
      if (self->paused_) return self->Fail(ClientOutcome::kAborted, kStoppedReading);
      if (self->conn_) self->conn_->socket.close();  // The pending operation fails: Fail().
    });
  }

 private:
  void Arm(std::chrono::milliseconds timeout) {
    timer_.expires_after(timeout);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (ec || self->finished_) return;  // Cancelled: the exchange ended or moved on.
      self->expired_ = true;
      if (self->conn_) self->conn_->socket.close();
    });
  }

  void Connect() {
    conn_ = std::make_unique<Connection>(client_.io_);
    const size_t colon = address_.rfind(':');
    if (colon == std::string::npos)
      return Fail(ClientOutcome::kConnectFailed, "no port in address");
    auto connected = [self = shared_from_this()](const error_code& ec) {
      if (ec) {
        if (self->cancelled_) return self->Fail(ClientOutcome::kAborted, kStoppedReading);
        return self->Fail(ClientOutcome::kConnectFailed,
                          self->expired_ ? "connect timed out" : ec.message());
      }
      if (!self->answering_) {  // The answer's deadline, once connected.
        self->answering_ = true;
        self->Arm(self->request_.timeout);
      }
      self->Write();
    };
    error_code bad;
    auto ip = asio::ip::make_address(address_.substr(0, colon), bad);
    int port = 0;
    const char* p = address_.data() + colon + 1;
    const char* end = address_.data() + address_.size();
    const auto parsed = std::from_chars(p, end, port);
    if (!bad && parsed.ec == std::errc() && parsed.ptr == end && port > 0 && port < 65536) {
      // A numeric address (every copy's, fleet-sim's server): no resolver.
      conn_->socket.async_connect({ip, static_cast<uint16_t>(port)}, std::move(connected));
      return;
    }
    resolver_.emplace(client_.io_);
    resolver_->async_resolve(
        address_.substr(0, colon), address_.substr(colon + 1),
        [self = shared_from_this(), connected = std::move(connected)](
            const error_code& ec, asio::ip::tcp::resolver::results_type results) mutable {
          if (ec) return self->Fail(ClientOutcome::kConnectFailed, ec.message());
          asio::async_connect(
              self->conn_->socket, results,
              [connected = std::move(connected)](
                  const error_code& ec2, const asio::ip::tcp::endpoint&) { connected(ec2); });
        });
  }

  void Write() {
    parser_.emplace();
    parser_->body_limit(kMaxBufferedBodyBytes);
    beast::http::async_write(conn_->socket, req_,
                             [self = shared_from_this()](const error_code& ec, size_t) {
                               if (ec) return self->Retry(ec);
                               self->ReadHeader();
                             });
  }

  void ReadHeader() {
    beast::http::async_read_header(conn_->socket, conn_->buffer, *parser_,
                                   [self = shared_from_this()](const error_code& ec, size_t) {
                                     if (ec) return self->Retry(ec);
                                     self->Head();
                                   });
  }

  void Head() {
    const auto& head = parser_->get();
    reply_.status = static_cast<int>(head.result_int());
    for (const auto& field : head) {
      reply_.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    streaming_ = sink_ != nullptr && reply_.status >= 200 && reply_.status < 300;
    if (sink_ != nullptr && !sink_->OnHead(reply_)) {
      return Fail(ClientOutcome::kAborted, kStoppedReading);
    }
    ReadBody();
  }

  // A reused connection the peer closed while idle fails before any byte of an answer: the
  // request never reached the peer's handler, so it goes again on a fresh connection, once.
  void Retry(const error_code& ec) {
    if (reused_ && !expired_ && !cancelled_ && IsStaleConnection(ec)) {
      reused_ = false;
      return Connect();
    }
    Fail(ec);
  }

  // A streamed body is read a chunk at a time into chunk_ and handed over; any other body is
  // read straight into the reply, sized once when its length is known.
  void ReadBody() {
    if (parser_->is_done()) return Done();
    char* into = nullptr;
    size_t room = kReadChunkBytes;
    if (streaming_) {
      Arm(request_.timeout);  // A stream's deadline is per read.
      chunk_.resize(kReadChunkBytes);
      into = chunk_.data();
    } else {
      const size_t have = reply_.body.size();
      if (auto total = parser_->content_length(); total && *total > have) room = *total - have;
      reply_.body.resize(have + room);
      into = reply_.body.data() + have;
    }
    parser_->get().body().data = into;
    parser_->get().body().size = room;
    beast::http::async_read_some(conn_->socket, conn_->buffer, *parser_,
                                 [self = shared_from_this(), room](error_code ec, size_t) {
                                   if (ec == beast::http::error::need_buffer) ec = {};
                                   const size_t n = room - self->parser_->get().body().size;
                                   if (!self->streaming_)
                                     self->reply_.body.resize(self->reply_.body.size() - room + n);
                                   if (ec) return self->Fail(ec);
                                   self->Consume(n);
                                 });
  }

  void Consume(size_t n) {
    if (streaming_ && n > 0) {
      switch (sink_->OnData(std::string_view(chunk_.data(), n))) {
        case StreamSink::Flow::kMore:
          break;
        case StreamSink::Flow::kPause:
          if (parser_->is_done()) break;
          paused_ = true;  // Resume() reads on; the deadline waits too.
          timer_.cancel();
          return;
        case StreamSink::Flow::kStop:
          return Fail(ClientOutcome::kAborted, kStoppedReading);
      }
    }
    ReadBody();
  }

  void Done() {
    if (parser_->get().keep_alive() && conn_->buffer.size() == 0) {
      client_.Park(address_, std::move(conn_));
    }
    Finish();
  }

  void Fail(const error_code& ec) {
    if (cancelled_) return Fail(ClientOutcome::kAborted, kStoppedReading);
    Fail(expired_ ? ClientOutcome::kTimedOut : ClientOutcome::kBroken,
         expired_ ? "timed out" : ec.message());
  }
  void Fail(ClientOutcome outcome, std::string detail) {
    reply_.outcome = outcome;
    reply_.detail = std::move(detail);
    conn_.reset();
    Finish();
  }
  void Finish() {
    finished_ = true;
    paused_ = false;
    timer_.cancel();
    if (sink_ != nullptr) {
      auto sink = std::move(sink_);
      return sink->OnEnd(std::move(reply_));
    }
    auto done = std::move(done_);
    done(std::move(reply_));
  }

  HttpClient& client_;
  const std::string address_;
  const ClientRequest request_;
  std::function<void(ClientReply)> done_;  // A unary call's.
  std::shared_ptr<StreamSink> sink_;       // A stream's.
  beast::http::request<beast::http::span_body<const char>> req_;
  std::unique_ptr<Connection> conn_;
  std::optional<asio::ip::tcp::resolver> resolver_;  // For a name, not a numeric address.
  asio::steady_timer timer_{client_.io_};
  std::optional<beast::http::response_parser<beast::http::buffer_body>> parser_;
  std::string chunk_;  // A stream's read buffer.
  ClientReply reply_;
  bool reused_ = false;
  bool answering_ = false;  // The answer's deadline is set (after the connect's).
  bool streaming_ = false;  // A 2xx answer to a stream: its body goes to the sink.
  bool expired_ = false;    // The deadline passed: a failure now is a timeout.
  bool cancelled_ = false;  // Cancel(): a failure now is an abort.
  bool paused_ = false;     // The sink asked for no more until Resume().
  bool finished_ = false;
};

HttpClient::HttpClient(ClientOptions options)
    : options_(options),
      own_io_(options.io == nullptr ? std::make_unique<asio::io_context>(1) : nullptr),
      io_(options.io != nullptr ? *options.io : *own_io_) {
  if (own_io_ != nullptr) {
    work_.emplace(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
  }
}

HttpClient::~HttpClient() {
  if (own_io_ == nullptr) return;
  work_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
  idle_.clear();  // Their sockets belong to the loop's io_context.
}

std::shared_ptr<HttpClient::Handle> HttpClient::Call(const std::string& address,
                                                     ClientRequest request,
                                                     std::function<void(ClientReply)> done) {
  return Start(address, std::move(request), std::move(done), nullptr);
}

std::shared_ptr<HttpClient::Handle> HttpClient::OpenStream(const std::string& address,
                                                           ClientRequest request,
                                                           std::shared_ptr<StreamSink> sink) {
  return Start(address, std::move(request), nullptr, std::move(sink));
}

std::shared_ptr<HttpClient::Exchange> HttpClient::Start(const std::string& address,
                                                        ClientRequest request,
                                                        std::function<void(ClientReply)> done,
                                                        std::shared_ptr<StreamSink> sink) {
  auto exchange = std::make_shared<Exchange>(*this, address, std::move(request), std::move(done),
                                             std::move(sink));
  asio::post(io_, [exchange] { exchange->Begin(); });
  return exchange;
}

std::unique_ptr<HttpClient::Connection> HttpClient::TakeIdle(const std::string& address) {
  std::vector<std::unique_ptr<Connection>> expired;  // Closed outside the lock.
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  auto it = idle_.find(address);
  if (it == idle_.end()) return nullptr;
  auto& pool = it->second;
  while (!pool.empty()) {
    std::unique_ptr<Connection> conn = std::move(pool.back());
    pool.pop_back();
    if (now - conn->idle_since < options_.max_idle_age) return conn;
    expired.push_back(std::move(conn));
  }
  return nullptr;
}

void HttpClient::Park(const std::string& address, std::unique_ptr<Connection> conn) {
  conn->idle_since = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  auto& pool = idle_[address];
  if (pool.size() < options_.max_idle_per_address) pool.push_back(std::move(conn));
}

void HttpClient::Forget(const std::string& address) {
  std::vector<std::unique_ptr<Connection>> drop;  // Closed outside the lock.
  std::lock_guard lock(mu_);
  if (auto it = idle_.find(address); it != idle_.end()) {
    drop = std::move(it->second);
    idle_.erase(it);
  }
}

}  // namespace carve::http
