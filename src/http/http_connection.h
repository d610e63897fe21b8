// Internal to the HTTP front end: one client connection, driven by the event loop. It reads and
// parses requests incrementally (Beast's parser fed by non-blocking reads), hands each complete
// request to a worker, writes the answer (or a streamed body, chunk by chunk), and enforces the
// idle, header, body and write deadlines. All its methods run on the loop thread; workers reach
// it only through ConnectionHost::Post.
//
// On an HTTPS listener the same connection speaks TLS (tls_stream.h) over the same non-blocking
// socket: the handshake runs first, under the deadline of the first request's headers, and every
// read and write goes through OpenSSL; the plain path is unchanged (one branch on `tls_`). A
// client that sends plain HTTP to an HTTPS listener gets a plain 400 saying so.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "http/http_internal.h"
#include "http/tls_stream.h"

namespace carve::http::internal {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `tls`: the listener's TLS context (outliving the connection), or nullptr for plain HTTP.
  Connection(ConnectionHost& host, boost::asio::ip::tcp::socket socket, const TlsContext* tls);

  void Start();
  // The server is stopping: an idle or half-read connection closes now; one whose request is
  // being handled closes once it is answered; an async request still waiting is answered 503.
  void OnServerStop();

 private:
  enum class State { kHandshaking, kReading, kHandling, kWriting, kStreaming, kDraining, kClosed };
  using WriteDone = std::function<void(const boost::system::error_code&, size_t)>;

  // TLS: the first bytes decide between a handshake and a plain-HTTP refusal.
  void OnFirstBytes(const boost::system::error_code& ec);
  void ContinueHandshake();
  // Waits for the readiness a TLS call asked for, then runs `next` (unless closed meanwhile).
  void WaitTls(TlsStream::Want want, std::function<void(const boost::system::error_code&)> next);
  void WaitForData();
  void OnReadable(const boost::system::error_code& ec);
  void ReadTls();
  // Writes all of `buffers` (kept alive by the caller), then calls `done` on the loop: asio's
  // async_write on a plain connection, TLS records on an HTTPS one.
  template <class Buffers, class Handler>
  void Write(const Buffers& buffers, Handler&& done);
  void WriteTls(WriteDone done);
  // Ends the sending side: close_notify first on TLS, then the TCP FIN.
  void ShutdownSend();
  // Feeds buffered bytes to the parser; dispatches a complete request.
  void Parse();
  void Dispatch();
  void Respond(uint64_t generation, NativeResponse response);
  void WriteResponse(NativeResponse response, bool keep_alive);
  void WriteChunk(uint64_t generation, std::string chunk, std::shared_ptr<std::promise<bool>> done);
  void EndStream(uint64_t generation);
  void AfterWrite(bool keep_alive);
  // Answers an unparseable request, then reads and discards what the client still sends (so it
  // finishes sending and reads the answer), then closes.
  void Refuse(NativeResponse response);
  void Drain();
  void ArmTimer(std::chrono::milliseconds after);
  void CancelTimer();
  void Close();

  ConnectionHost& host_;
  boost::asio::ip::tcp::socket socket_;
  const TlsContext* const tls_context_;  // Null on a plain listener.
  std::unique_ptr<TlsStream> tls_;       // Set once the client began a TLS handshake.
  std::string tls_out_;                  // TLS: the plaintext being written, and how much is.
  size_t tls_written_ = 0;
  boost::asio::steady_timer timer_;
  uint64_t timer_generation_ = 0;
  State state_ = State::kReading;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool header_seen_ = false;
  bool wants_keep_alive_ = true;  // The request in hand asked to keep the connection.
  bool async_pending_ = false;    // An async route holds the Responder.
  uint64_t generation_ = 0;       // Of the request in hand; a late answer to another is ignored.
  std::string request_id_;
  // The response being written (headers and body kept alive for the write).
  std::string head_;
  std::string body_;
  size_t drained_ = 0;
};

}  // namespace carve::http::internal
