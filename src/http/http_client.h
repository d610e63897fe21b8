// HttpClient: carve's one in-process HTTP/1.1 client for hot paths (the router's unary and
// streamed calls to model copies, fleet-sim's thousands of agents). Boost.Beast over Asio on one
// event loop, with one pool of idle keep-alive connections per "host:port": a request does not
// pay a TCP handshake, and no thread waits for an answer. cpp-httplib stays where a process
// makes a few calls off the hot path (the agent, the CLI, etcd, replica forwarding); see
// docs/design.md, "HTTP clients".
//
// Outcomes are values, because each drives a different decision in the caller:
//   kConnectFailed  nothing was sent (refused, unreachable, connect timed out): safe to retry.
//   kTimedOut       the deadline passed (unary: the whole answer within `timeout`; stream: each
//                   read within `timeout`, so a stream that keeps producing is never cut).
//   kBroken         the connection failed after the request went out (reset, closed mid-body).
//   kAborted        the caller stopped the exchange (a stream's sink, or Cancel()).
//   kOk             a complete response arrived (any HTTP status).
// A pooled connection that the peer closed while it sat idle fails before any byte of an answer;
// the request is then sent once more on a fresh connection (no byte of it reached the peer's
// handler). Idle connections older than max_idle_age are not reused.
//
// Thread-safe. Callbacks run on the client's loop thread and must not block. At destruction the
// loop stops (when the client owns it) and exchanges under way are dropped without a callback.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace carve::http {

enum class ClientOutcome { kOk, kConnectFailed, kTimedOut, kBroken, kAborted };
std::string_view ClientOutcomeName(ClientOutcome outcome);

struct ClientRequest {
  std::string method = "POST";
  std::string target = "/";
  // Sent as given; Host is the address unless given here; Content-Length is computed.
  // Content-Type defaults to application/octet-stream when a body is sent without one.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{60000};
};

struct ClientReply {
  ClientOutcome outcome = ClientOutcome::kOk;
  int status = 0;  // HTTP status once the status line arrived, else 0.
  std::vector<std::pair<std::string, std::string>> headers;
  // The whole body (Call), or for a stream the body of a non-2xx answer (a 2xx body goes to
  // the sink instead).
  std::string body;
  std::string detail;  // What failed, for messages ("Connection refused").
  // The first header named `name` (case-insensitive); "" when absent.
  std::string Header(std::string_view name) const;
};

// A streamed answer's consumer. Every call runs on the client's loop thread.
class StreamSink {
 public:
  enum class Flow { kMore, kPause, kStop };
  virtual ~StreamSink() = default;
  // The status line and headers arrived. false: abort (kAborted).
  virtual bool OnHead(const ClientReply& head) = 0;
  // Each piece of a 2xx body as it arrives. kPause: read nothing more until the stream's
  // Resume(); kStop: abort (kAborted; the connection is dropped, the rest is still coming).
  virtual Flow OnData(std::string_view data) = 0;
  // Once, last: kOk with the buffered body of a non-2xx answer, or how it failed. Not called
  // when the exchange was dropped at the client's destruction.
  virtual void OnEnd(ClientReply final) = 0;
};

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{2000};
  size_t max_idle_per_address = 256;
  // An idle connection older than this is closed rather than reused. Servers drop idle
  // keep-alive connections after a few seconds (cpp-httplib and uvicorn after 5 s); a request
  // sent on one they are closing fails. The default suits model copies; fleet-sim, talking to
  // carve's own server, keeps its connections as its agents would.
  std::chrono::milliseconds max_idle_age{2000};
  // The loop to run on (fleet-sim shares its own); nullptr: the client starts its own thread.
  boost::asio::io_context* io = nullptr;
};

class HttpClient {
 public:
  explicit HttpClient(ClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // A request under way. Cancel() ends it kAborted (its callback or sink still hears so);
  // Resume() reads on in a stream whose sink paused.
  class Handle {
   public:
    virtual ~Handle() = default;
    virtual void Resume() = 0;
    virtual void Cancel() = 0;
  };

  // One request, whole answer buffered (at most 1 GiB); `done` runs once.
  std::shared_ptr<Handle> Call(const std::string& address, ClientRequest request,
                               std::function<void(ClientReply)> done);
  // One request whose answer goes to `sink` as it arrives.
  std::shared_ptr<Handle> OpenStream(const std::string& address, ClientRequest request,
                                     std::shared_ptr<StreamSink> sink);

  // Closes idle connections to `address` (e.g. after a copy left the rotation).
  void Forget(const std::string& address);

 private:
  class Exchange;
  struct Connection;
  std::unique_ptr<Connection> TakeIdle(const std::string& address);  // nullptr: none usable.
  void Park(const std::string& address, std::unique_ptr<Connection> conn);
  std::shared_ptr<Exchange> Start(const std::string& address, ClientRequest request,
                                  std::function<void(ClientReply)> done,
                                  std::shared_ptr<StreamSink> sink);

  const ClientOptions options_;
  std::unique_ptr<boost::asio::io_context> own_io_;  // When options_.io is nullptr.
  boost::asio::io_context& io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<Connection>>> idle_;  // Guarded by mu_.
  std::thread thread_;  // Runs own_io_; started last.
};

}  // namespace carve::http
