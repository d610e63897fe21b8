#include "http/http_connection.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <cerrno>
#include <iterator>

namespace carve::http::internal {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

// Reads take what the socket holds, at least this much room and at most kMaxRead at a time.
constexpr size_t kMinRead = 4096;
constexpr size_t kMaxRead = 64 * 1024;
// A lingering close reads and discards at most this much, for at most kDrainTime.
constexpr size_t kMaxDrain = size_t{64} * 1024 * 1024;
constexpr std::chrono::seconds kDrainTime{5};
// TLS reads take one record's plaintext at most, 16 KiB (RFC 8446, 5.1).
constexpr size_t kTlsRead = size_t{16} * 1024;
// A TLS connection opens with a handshake record (content type 22, RFC 8446 5.1); a plain HTTP
// request opens with a method in capitals.
constexpr unsigned char kTlsHandshakeRecord = 22;

std::string Chunk(std::string_view data) {
  char size[20];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out(size, static_cast<size_t>(n));
  out.append(data);
  out.append("\r\n");
  return out;
}

}  // namespace

Connection::Connection(ConnectionHost& host, asio::ip::tcp::socket socket, const TlsContext* tls)
    : host_(host), socket_(std::move(socket)), tls_context_(tls), timer_(host.loop()) {}

void Connection::Start() {
  error_code ec;
  socket_.non_blocking(true, ec);
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  // A new connection's first request must arrive within the header deadline: a client that
  // connects and says nothing holds a descriptor, so it does not get the idle allowance. On TLS
  // the handshake runs inside the same deadline, so a stalled handshake is closed with it.
  ArmTimer(host_.options().header_timeout);
  if (tls_context_ != nullptr) {
    state_ = State::kHandshaking;
    socket_.async_wait(asio::ip::tcp::socket::wait_read,
                       [self = shared_from_this()](const error_code& e) { self->OnFirstBytes(e); });
    return;
  }
  WaitForData();
}

void Connection::OnFirstBytes(const error_code& ec) {
  if (state_ != State::kHandshaking) return;
  if (ec) return Close();
  unsigned char first = 0;
  const ssize_t n = ::recv(socket_.native_handle(), &first, 1, MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    socket_.async_wait(asio::ip::tcp::socket::wait_read,
                       [self = shared_from_this()](const error_code& e) { self->OnFirstBytes(e); });
    return;
  }
  if (n <= 0) return Close();
  if (first == kTlsHandshakeRecord) {
    tls_ = TlsStream::Accept(*tls_context_, socket_.native_handle());
    if (!tls_) return Close();
    return ContinueHandshake();
  }
  if (first >= 'A' && first <= 'Z') {
    // Plain HTTP to an HTTPS port (nginx answers the same): say so in plain HTTP, which is what
    // the client reads, instead of a reset it cannot explain.
    return Refuse(NativeResponse{400,
                                 ErrorBody("BadRequest",
                                           "this port speaks HTTPS only: the request was sent as "
                                           "plain HTTP; use an https:// URL"),
                                 kAmzJson});
  }
  Close();
}

void Connection::ContinueHandshake() {
  const TlsStream::Io io = tls_->Handshake();
  if (io.ec) {
    if (spdlog::should_log(spdlog::level::debug)) {
      error_code pec;
      spdlog::debug(
          "TLS handshake with {} failed: {}", socket_.remote_endpoint(pec).address().to_string(),
          io.ec == boost::system::errc::protocol_error ? tls_->error_text() : io.ec.message());
    }
    return Close();
  }
  if (io.want != TlsStream::Want::kNothing) {
    return WaitTls(io.want, [self = shared_from_this()](const error_code& ec) {
      if (ec || self->state_ != State::kHandshaking) return self->Close();
      self->ContinueHandshake();
    });
  }
  // Established. The first request's headers are still due by the deadline armed at accept.
  WaitForData();
}

void Connection::WaitTls(TlsStream::Want want, std::function<void(const error_code&)> next) {
  socket_.async_wait(want == TlsStream::Want::kWritable ? asio::ip::tcp::socket::wait_write
                                                        : asio::ip::tcp::socket::wait_read,
                     [self = shared_from_this(), next = std::move(next)](const error_code& ec) {
                       // Closed meanwhile: the descriptor's number may already be another
                       // connection's, so OpenSSL must not touch it again.
                       next(!ec && self->state_ == State::kClosed
                                ? error_code(asio::error::operation_aborted)
                                : ec);
                     });
}

void Connection::WaitForData() {
  state_ = State::kReading;
  if (tls_ && tls_->HasBufferedInput()) {  // Already decrypted: the socket may stay silent.
    asio::post(host_.loop(), [self = shared_from_this()] { self->OnReadable({}); });
    return;
  }
  socket_.async_wait(asio::ip::tcp::socket::wait_read,
                     [self = shared_from_this()](const error_code& ec) { self->OnReadable(ec); });
}

void Connection::OnReadable(const error_code& ec) {
  if (state_ != State::kReading) return;
  if (ec) return Close();
  if (tls_) return ReadTls();
  for (;;) {
    error_code rec;
    const size_t available = socket_.available(rec);
    const size_t want = std::min(std::max(available, kMinRead), kMaxRead);
    const size_t n = socket_.read_some(buffer_.prepare(want), rec);
    if (rec == asio::error::would_block || rec == asio::error::try_again) break;
    if (rec) return Close();  // EOF or a reset: the client went away (mid-request or not).
    buffer_.commit(n);
    if (!parser_ && !header_seen_) {
      // The first byte of a request: its headers must follow within the header deadline.
      ArmTimer(host_.options().header_timeout);
    }
    Parse();
    if (state_ != State::kReading) return;
    if (n < want) break;  // Drained what the socket had.
  }
  WaitForData();
}

// Reads records until OpenSSL wants more from the socket. OpenSSL reads a record at a time, so
// the socket is never known to be drained before that.
void Connection::ReadTls() {
  for (;;) {
    const TlsStream::Io io = tls_->Read(buffer_.prepare(kTlsRead).data(), kTlsRead);
    if (io.ec) return Close();  // A close_notify, a reset or a corrupt record.
    if (io.want == TlsStream::Want::kReadable) break;
    if (io.want == TlsStream::Want::kWritable) {
      return WaitTls(io.want, [self = shared_from_this()](const error_code& ec) {
        if (ec) return self->Close();
        self->OnReadable({});
      });
    }
    buffer_.commit(io.bytes);
    if (!parser_ && !header_seen_) ArmTimer(host_.options().header_timeout);
    Parse();
    if (state_ != State::kReading) return;
  }
  WaitForData();
}

template <class Buffers, class Handler>
void Connection::Write(const Buffers& buffers, Handler&& done) {
  if (!tls_) {
    asio::async_write(socket_, buffers, std::forward<Handler>(done));
    return;
  }
  // One buffer, so that a response's head and body go out in one record where they fit.
  tls_out_.clear();
  tls_written_ = 0;
  for (auto it = asio::buffer_sequence_begin(buffers);  // NOLINT(readability-qualified-auto)
       it != asio::buffer_sequence_end(buffers); ++it) {
    const asio::const_buffer b(*it);
    tls_out_.append(static_cast<const char*>(b.data()), b.size());
  }
  WriteTls(WriteDone(std::forward<Handler>(done)));
}

void Connection::WriteTls(WriteDone done) {
  error_code ec;
  while (tls_written_ < tls_out_.size()) {
    if (state_ == State::kClosed) {
      ec = asio::error::operation_aborted;
      break;
    }
    const TlsStream::Io io =
        tls_->Write(tls_out_.data() + tls_written_, tls_out_.size() - tls_written_);
    if (io.ec) {
      ec = io.ec;
      break;
    }
    if (io.want != TlsStream::Want::kNothing) {
      return WaitTls(io.want, [self = shared_from_this(),
                               done = std::move(done)](const error_code& wec) mutable {
        if (wec) return done(wec, 0);
        self->WriteTls(std::move(done));
      });
    }
    tls_written_ += io.bytes;
  }
  // As asio's own writes do, the handler never runs inside the call that started the write.
  const size_t written = ec ? 0 : tls_out_.size();
  if (!ec) std::string().swap(tls_out_);
  asio::post(host_.loop(), [self = shared_from_this(), done = std::move(done), ec, written] {
    done(ec, written);
  });
}

void Connection::ShutdownSend() {
  if (tls_) tls_->SendCloseNotify();
  error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
}

void Connection::Parse() {
  if (!parser_) {
    parser_.emplace();
    parser_->header_limit(kHeaderLimitBytes);
    parser_->body_limit(host_.options().max_body_bytes);
    parser_->eager(true);
  }
  while (buffer_.size() > 0 && !parser_->is_done()) {
    error_code ec;
    const size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == http::error::need_more) break;
    if (ec) return Refuse(ParseFailure(ec, host_.options().max_body_bytes));
    if (parser_->is_header_done() && !header_seen_) {
      header_seen_ = true;
      const auto& head = parser_->get();
      const auto fields = static_cast<size_t>(std::distance(head.begin(), head.end()));
      if (fields > kMaxHeaderFields) return Refuse(TooManyHeaderFields(fields));
      ArmTimer(host_.options().body_timeout);
      const auto expect = parser_->get()[http::field::expect];
      // No Expect header is an empty view with a null data(): compare views, never call
      // strncasecmp on it (UBSan, found by the http_request fuzz target).
      if (!parser_->is_done() && boost::beast::iequals(expect, "100-continue")) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        if (tls_) {
          // One small record on a connection whose previous answers were written: a socket
          // that cannot take it belongs to a client that does not read.
          const TlsStream::Io io = tls_->Write(kContinue.data(), kContinue.size());
          if (io.ec || io.want != TlsStream::Want::kNothing) return Close();
        } else {
          error_code wec;
          asio::write(socket_, asio::buffer(kContinue.data(), kContinue.size()), wec);
        }
      }
    }
    if (used == 0) break;
  }
  if (parser_->is_done()) Dispatch();
}

void Connection::Dispatch() {
  CancelTimer();
  state_ = State::kHandling;
  http::request<http::string_body> msg = parser_->release();
  parser_.reset();
  header_seen_ = false;
  wants_keep_alive_ = msg.keep_alive();
  Incoming in;
  in.method = std::string(msg.method_string());
  std::string_view target = msg.target();
  const size_t q = target.find('?');
  in.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) in.query = std::string(target.substr(q + 1));
  in.headers.reserve(16);
  for (const auto& field : msg) {
    in.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  in.body = std::move(msg.body());
  request_id_ = NewRequestId();
  const uint64_t generation = ++generation_;
  std::weak_ptr<Connection> weak = shared_from_this();
  std::shared_ptr<LoopGate> gate = host_.gate();
  Responder respond = [weak, generation, gate](NativeResponse out) {
    gate->Post([weak, generation, out = std::move(out)]() mutable {
      if (auto self = weak.lock()) self->Respond(generation, std::move(out));
    });
  };
  async_pending_ = false;
  auto taken_async = [weak, generation, gate] {
    gate->Post([weak, generation] {
      auto self = weak.lock();
      if (!self || self->generation_ != generation || self->state_ != State::kHandling) return;
      self->async_pending_ = true;
      if (self->host_.stopping()) self->OnServerStop();
    });
  };
  if (!host_.Handle(std::move(in), request_id_, std::move(respond), std::move(taken_async))) {
    Respond(generation,
            NativeResponse{503,
                           ErrorBody("ServiceUnavailable",
                                     "the server is busy: every worker is taken and the queue "
                                     "is full; retry"),
                           kAmzJson});
  }
}

void Connection::Respond(uint64_t generation, NativeResponse response) {
  if (generation != generation_ || state_ != State::kHandling) return;
  const bool keep_alive = wants_keep_alive_ && !host_.stopping();
  if (!response.stream) return WriteResponse(std::move(response), keep_alive);
  // Streamed: the head now, then the body from a worker, chunk by chunk.
  head_ = SerializeHead(response, request_id_, keep_alive);
  state_ = State::kStreaming;
  ArmTimer(host_.options().write_timeout);
  Write(asio::buffer(head_), [self = shared_from_this(), generation,
                              stream = std::move(response.stream)](const error_code& ec,
                                                                   size_t) mutable {
    if (self->state_ != State::kStreaming) return;
    self->CancelTimer();
    if (ec) return self->Close();
    ConnectionHost& host = self->host_;
    std::weak_ptr<Connection> weak = self;
    const bool queued = host.RunOnWorker([weak, generation, &host, stream = std::move(stream)] {
      StreamWriter writer = [weak, generation, &host](std::string_view chunk) {
        if (chunk.empty()) return true;  // An empty chunk would end the body.
        auto done = std::make_shared<std::promise<bool>>();
        auto written = done->get_future();
        host.Post([weak, generation, data = Chunk(chunk), done]() mutable {
          auto conn = weak.lock();
          if (!conn) return done->set_value(false);
          conn->WriteChunk(generation, std::move(data), done);
        });
        return written.get();
      };
      stream(writer);
      host.Post([weak, generation] {
        if (auto conn = weak.lock()) conn->EndStream(generation);
      });
    });
    if (!queued) self->Close();  // The head promised a body no worker can produce.
  });
}

void Connection::WriteChunk(uint64_t generation, std::string chunk,
                            std::shared_ptr<std::promise<bool>> done) {
  if (generation != generation_ || state_ != State::kStreaming) return done->set_value(false);
  body_ = std::move(chunk);
  ArmTimer(host_.options().write_timeout);
  Write(asio::buffer(body_), [self = shared_from_this(), done](const error_code& ec, size_t) {
    self->CancelTimer();
    done->set_value(!ec && self->state_ == State::kStreaming);
    if (ec) self->Close();
  });
}

void Connection::EndStream(uint64_t generation) {
  if (generation != generation_ || state_ != State::kStreaming) return;
  static constexpr std::string_view kLast = "0\r\n\r\n";
  const bool keep_alive = wants_keep_alive_ && !host_.stopping();
  state_ = State::kWriting;
  ArmTimer(host_.options().write_timeout);
  Write(asio::buffer(kLast.data(), kLast.size()),
        [self = shared_from_this(), keep_alive](const error_code& ec, size_t) {
          if (ec) return self->Close();
          self->AfterWrite(keep_alive);
        });
}

void Connection::WriteResponse(NativeResponse response, bool keep_alive) {
  head_ = SerializeHead(response, request_id_, keep_alive);
  body_ = std::move(response.body);
  state_ = State::kWriting;
  ArmTimer(host_.options().write_timeout);
  const std::array<asio::const_buffer, 2> out = {asio::buffer(head_), asio::buffer(body_)};
  Write(out, [self = shared_from_this(), keep_alive](const error_code& ec, size_t) {
    if (self->state_ != State::kWriting) return;
    if (ec) return self->Close();
    self->AfterWrite(keep_alive);
  });
}

void Connection::AfterWrite(bool keep_alive) {
  CancelTimer();
  std::string().swap(head_);
  std::string().swap(body_);
  if (!keep_alive || host_.stopping()) {
    ShutdownSend();
    return Close();
  }
  state_ = State::kReading;
  if (buffer_.size() > 0) {  // Pipelined: the next request is here already.
    ArmTimer(host_.options().header_timeout);
    Parse();
    if (state_ == State::kReading) WaitForData();
    return;
  }
  buffer_.shrink_to_fit();  // An idle connection keeps no buffer.
  ArmTimer(host_.options().keep_alive_timeout);
  WaitForData();
}

void Connection::Refuse(NativeResponse response) {
  CancelTimer();
  parser_.reset();
  request_id_ = NewRequestId();
  head_ = SerializeHead(response, request_id_, false);
  body_ = std::move(response.body);
  state_ = State::kDraining;
  ArmTimer(kDrainTime);
  const std::array<asio::const_buffer, 2> out = {asio::buffer(head_), asio::buffer(body_)};
  Write(out, [self = shared_from_this()](const error_code& ec, size_t) {
    if (self->state_ != State::kDraining) return;
    if (ec) return self->Close();
    self->ShutdownSend();
    self->buffer_.clear();
    self->Drain();
  });
}

void Connection::Drain() {
  socket_.async_wait(asio::ip::tcp::socket::wait_read,
                     [self = shared_from_this()](const error_code& ec) {
                       if (self->state_ != State::kDraining) return;
                       if (ec) return self->Close();
                       char scratch[16384];
                       for (;;) {
                         error_code rec;
                         const size_t n = self->socket_.read_some(asio::buffer(scratch), rec);
                         if (rec == asio::error::would_block || rec == asio::error::try_again)
                           break;
                         if (rec)
                           return self->Close();  // EOF: the client read the answer and hung up.
                         self->drained_ += n;
                         if (self->drained_ > kMaxDrain) return self->Close();
                       }
                       self->Drain();
                     });
}

void Connection::OnServerStop() {
  switch (state_) {
    case State::kHandshaking:
    case State::kReading:
    case State::kDraining:
      return Close();
    case State::kHandling:
      if (async_pending_) {
        Respond(generation_, NativeResponse{503,
                                            ErrorBody("ServiceUnavailable",
                                                      "the server is stopping; retry another "
                                                      "replica or after the restart"),
                                            kAmzJson});
      }
      return;  // Answered with Connection: close when the handler is done.
    case State::kWriting:
    case State::kStreaming:
    case State::kClosed:
      return;
  }
}

void Connection::ArmTimer(std::chrono::milliseconds after) {
  const uint64_t generation = ++timer_generation_;
  timer_.expires_after(after);
  timer_.async_wait([self = shared_from_this(), generation](const error_code& ec) {
    if (ec || generation != self->timer_generation_) return;
    // A deadline passed: an idle connection, a slow sender, a client that stopped reading.
    if (self->state_ != State::kHandling) self->Close();
  });
}

void Connection::CancelTimer() {
  ++timer_generation_;
  timer_.cancel();
}

void Connection::Close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  CancelTimer();
  error_code ec;
  socket_.close(ec);
  host_.Closed(this);
}

}  // namespace carve::http::internal
