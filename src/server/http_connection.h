// Internal to the HTTP front end: one client connection, driven by the event loop. It reads and
// parses requests incrementally (Beast's parser fed by non-blocking reads), hands each complete
// request to a worker, writes the answer (or a streamed body, chunk by chunk), and enforces the
// idle, header, body and write deadlines. All its methods run on the loop thread; workers reach
// it only through ConnectionHost::Post.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "server/http_internal.h"

namespace carve::server::http_internal {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(ConnectionHost& host, boost::asio::ip::tcp::socket socket);

  void Start();
  // The server is stopping: an idle or half-read connection closes now; one whose request is
  // being handled closes once it is answered; an async request still waiting is answered 503.
  void OnServerStop();

 private:
  enum class State { kReading, kHandling, kWriting, kStreaming, kDraining, kClosed };

  void WaitForData();
  void OnReadable(const boost::system::error_code& ec);
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

}  // namespace carve::server::http_internal
