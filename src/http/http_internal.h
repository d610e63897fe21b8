// Internal to the HTTP front end (http_server.cc, http_connection.cc): request and route types,
// the helpers both use, and the interface a connection sees of its server.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/beast/http/error.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/http_server.h"

namespace carve::http::internal {

// Request line plus headers. botocore's signed requests carry well under 2 KiB.
inline constexpr uint32_t kHeaderLimitBytes = 64 * 1024;
// Header fields in one request; botocore sends about ten, a browser about twenty.
inline constexpr size_t kMaxHeaderFields = 128;
inline constexpr const char* kAmzJson = "application/x-amz-json-1.1";

std::string NewRequestId();
std::string ErrorBody(const std::string& type, const std::string& message);

// One request as read off the wire.
using Incoming = RawRequest;

// The answer to a request Beast could not parse.
NativeResponse ParseFailure(const boost::beast::error_code& ec, size_t max_body_bytes);
// The answer to a request with more than kMaxHeaderFields header fields.
NativeResponse TooManyHeaderFields(size_t fields);

// The status line and headers of `response` (and Content-Length, or chunked encoding when it
// streams), ending with the blank line.
std::string SerializeHead(const NativeResponse& response, const std::string& request_id,
                          bool keep_alive);

// Posts to the loop for as long as the server lives: a Responder an async route keeps (a
// registry waiter) may be called after the server is gone, and then does nothing.
class LoopGate {
 public:
  explicit LoopGate(boost::asio::io_context& loop) : loop_(&loop) {}
  void Post(std::function<void()> task);
  void Close();  // No post after this.

 private:
  std::mutex mu_;
  boost::asio::io_context* loop_;  // Guarded by mu_; null once closed.
};

// What a connection needs of its server. The loop thread calls everything here except Post,
// which any thread may call.
class ConnectionHost {
 public:
  virtual ~ConnectionHost() = default;
  virtual const HttpServerOptions& options() const = 0;
  virtual boost::asio::io_context& loop() = 0;
  // Runs `request` on a worker; `respond` gets its answer. When an async route takes the
  // Responder, `taken_async` is called first (from the worker). False when the queue is full
  // (the connection answers 503 itself).
  virtual bool Handle(Incoming request, std::string request_id, Responder respond,
                      std::function<void()> taken_async) = 0;
  // Runs `task` on a worker (a streamed body). False when the queue is full.
  virtual bool RunOnWorker(std::function<void()> task) = 0;
  // Runs `task` on the loop thread, from any thread.
  virtual void Post(std::function<void()> task) = 0;
  // The same, usable after the server is destroyed.
  virtual std::shared_ptr<LoopGate> gate() = 0;
  virtual bool stopping() const = 0;
  // The connection closed; the host drops it.
  virtual void Closed(const void* connection) = 0;
};

}  // namespace carve::http::internal
