// CopyClient: the router's HTTP/1.1 client to model copies (`POST /invocations` on
// "host:port"), with a pool of idle keep-alive connections per address so that a request does
// not pay a TCP handshake. Boost.Beast over FdStream: the request (headers and body) leaves in
// one sendmsg(), and a read polls only when no byte is waiting. A pooled connection that the
// copy closed while idle is detected on use and the request resent once on a fresh connection
// (no byte of it reached the copy's handler).
//
// Outcomes are values (CopyOutcome), because each one drives a different routing decision:
//   kConnectFailed  nothing was sent (refused / unreachable): safe to retry on another copy.
//   kTimedOut       no byte arrived for `timeout` (the timeout is per read, so a stream that keeps
//                   producing is never cut; a unary answer must start within it).
//   kBroken         the connection failed after the request went out (reset, closed mid-body).
//   kAborted        the caller's callback returned false (its client went away).
//   kOk             a complete response arrived (any HTTP status).
// Thread-safe: each call borrows its own connection.
//
// AsyncCall is Call without a thread (issue 14): the exchange runs on the client's own event
// loop (one Boost.Asio thread, Beast's tcp_stream with a deadline per operation) and `done` gets
// the reply there, so an invocation in flight costs a connection and a few KiB, not a worker.
// It keeps its own pool of idle connections, with the same rules as Call's.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace carve::runtime {

enum class CopyOutcome { kOk, kConnectFailed, kTimedOut, kBroken, kAborted };
std::string_view CopyOutcomeName(CopyOutcome outcome);

struct CopyRequest {
  std::string path = "/invocations";
  std::string body;
  std::string content_type;       // Sent as Content-Type when non-empty.
  std::string accept;             // Sent as Accept when non-empty.
  std::string custom_attributes;  // X-Amzn-SageMaker-Custom-Attributes when non-empty.
  std::chrono::milliseconds timeout{60000};
};

struct CopyReply {
  CopyOutcome outcome = CopyOutcome::kOk;
  int status = 0;    // HTTP status when headers arrived, else 0.
  std::string body;  // Whole body (Call), or the body of a non-2xx answer (Stream).
  std::string content_type;
  std::string custom_attributes;
  std::string detail;  // What failed, for messages ("Connection refused").
};

class CopyClient {
 public:
  explicit CopyClient(std::chrono::milliseconds connect_timeout = std::chrono::seconds(2),
                      size_t max_idle_per_address = 256);
  ~CopyClient();
  CopyClient(const CopyClient&) = delete;
  CopyClient& operator=(const CopyClient&) = delete;

  // One request, whole response buffered.
  CopyReply Call(const std::string& address, const CopyRequest& request);
  // The same without blocking: `done` runs once, on the client's event-loop thread (it must not
  // block). `request` is copied. At destruction, exchanges still under way are dropped without
  // calling `done`.
  void AsyncCall(const std::string& address, CopyRequest request,
                 std::function<void(CopyReply)> done);

  // One request whose 2xx body is handed over as it arrives: `on_headers(reply)` runs once with
  // status/content type filled; for a 2xx status `on_data` then gets each chunk. Either callback
  // returning false aborts (kAborted). A non-2xx body is buffered into the reply instead.
  CopyReply Stream(const std::string& address, const CopyRequest& request,
                   const std::function<bool(const CopyReply&)>& on_headers,
                   const std::function<bool(std::string_view)>& on_data);

  // Closes idle connections to `address` (e.g. after a copy left the rotation).
  void Forget(const std::string& address);

 private:
  struct Connection;
  std::unique_ptr<Connection> TakeIdle(const std::string& address);  // nullptr: none usable.
  void Return(const std::string& address, std::unique_ptr<Connection> conn);
  CopyReply Send(const std::string& address, const CopyRequest& request,
                 const std::function<bool(const CopyReply&)>* on_headers,
                 const std::function<bool(std::string_view)>* on_data);

  const std::chrono::milliseconds connect_timeout_;
  const size_t max_idle_per_address_;
  std::mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<Connection>>> idle_;  // Guarded by mu_.

  struct Loop;     // The event loop of AsyncCall, started by the first one.
  class Exchange;  // One AsyncCall.
  struct AsyncConnection;
  std::unique_ptr<AsyncConnection> TakeIdleAsync(const std::string& address);
  void ReturnAsync(const std::string& address, std::unique_ptr<AsyncConnection> conn);
  std::once_flag loop_started_;
  std::unique_ptr<Loop> loop_;
  std::map<std::string, std::vector<std::unique_ptr<AsyncConnection>>> async_idle_;  // mu_
};

}  // namespace carve::runtime
