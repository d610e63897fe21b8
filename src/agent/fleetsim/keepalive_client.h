// KeepAliveClient: one keep-alive HTTP/1.1 connection to the carve server, driven by an Asio
// event loop, one request at a time. Requests are signed by protocol::SignedClient's
// SignedHeaders, so they are byte for byte what `carve agent` sends; only the transport
// differs (thousands of these share one thread in `carve fleet-sim`).
//
// Not thread-safe: every call, and every callback, runs on the loop's thread. A request that
// fails on a reused connection before any answer byte arrived (the server closed it while
// idle) is sent once more on a fresh one; other failures reach the callback as Unavailable.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "protocol/signed_client.h"

namespace carve::agent::fleetsim {

class KeepAliveClient {
 public:
  using Callback = std::function<void(Result<protocol::HttpReply>)>;

  KeepAliveClient(boost::asio::io_context& io, boost::asio::ip::tcp::endpoint server,
                  const protocol::SignedClient& signer);
  ~KeepAliveClient();
  KeepAliveClient(const KeepAliveClient&) = delete;
  KeepAliveClient& operator=(const KeepAliveClient&) = delete;

  // Sends one request; `done` runs once with the reply or the error. At most one request is in
  // flight: calling Send while busy() answers FailedPrecondition through `done` at once.
  void Send(std::string method, std::string target, std::string body,
            std::chrono::milliseconds timeout, Callback done);
  bool busy() const { return state_ != nullptr; }
  // Drops the connection; a request in flight is answered Unavailable("closed").
  void Close();

 private:
  struct Request;
  struct Connection;  // socket + read buffer; pending handlers keep it alive
  void Connect();
  void Write();
  void Read();
  void Finish(Result<protocol::HttpReply> reply);
  void Fail(const std::string& step, const boost::system::error_code& ec);

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::endpoint server_;
  const protocol::SignedClient& signer_;
  std::shared_ptr<Connection> conn_;
  std::shared_ptr<Request> state_;
};

}  // namespace carve::agent::fleetsim
