// HttpServer: carve's HTTP/1.1 front end, serving the SageMaker awsJson1_1 protocol, carve's
// native JSON routes, the runtime API, /metrics and /ping on one listener. Requests are parsed
// and responses serialized by Boost.Beast over FdStream (server/fd_stream.h); each response goes
// out in one sendmsg(). Malformed requests get 400, oversized bodies 413 (max_body_bytes), and
// `Expect: 100-continue` is honoured.
//
// Every response carries an `x-amzn-RequestId` header (a fresh random UUID per request).
//  - `POST /` with `X-Amz-Target: SageMaker.<Op>`: SigV4-verified (unless insecure_no_auth), then
//    handed to the ApiHandler with the caller's account id; the ApiResponse is written back with
//    Content-Type application/x-amz-json-1.1 (and X-Amzn-Errortype + "__type" when error_type is
//    set). A missing or foreign X-Amz-Target -> 400 UnknownOperationException. Auth failures ->
//    403 {"__type": ..., "message": ...}. Every SageMaker call is counted in
//    carve_api_requests_total{operation,code} and timed in carve_api_request_duration_seconds
//    {operation} (code = "200" or the error type).
//  - Native routes: method + pattern like "/v1/endpoints/{name}/carve" ({x} matches one non-empty
//    path segment). Authenticated ones need a SigV4 signature (service as configured) and get the
//    account id; public ones (e.g. /metrics, /ping) get account_id "".
//  - GET /metrics (registry exposition) and GET /ping are built in.
// Keep-alive connections each hold one worker thread while open: size `threads` for the number of
// concurrent clients (botocore keeps up to 10 pooled connections per client); further connections
// wait, accepted, until a worker frees up.
// Lifecycle: configure (SetApiHandler/AddRoute) before Start; Start binds, listens and serves on
// background threads; Stop() is idempotent, thread-safe and async-signal-safe (one write() to a
// pipe), so a SIGTERM handler may call it. After Stop() no new connection is accepted, idle
// keep-alive connections close at once, and a request in progress is answered (with
// Connection: close); Wait() returns when that is done. Stop() before Start() has no effect.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "aws/credentials.h"
#include "common/clock.h"
#include "common/result.h"
#include "server/api.h"
#include "server/metrics.h"

namespace carve::server {

struct HttpServerOptions {
  // Skip SigV4 and treat every caller as `insecure_account_id` (logs a warning at Start).
  bool insecure_no_auth = false;
  std::string insecure_account_id = std::string(aws::kDefaultAccountId);
  std::string signing_service = "sagemaker";  // Service name required in the scope.
  std::chrono::seconds max_clock_skew = std::chrono::minutes(15);
  int threads = 128;  // Worker threads (one per open conn).
  // How long an idle keep-alive connection is kept; clients (urllib3) reconnect transparently
  // when an idle one was closed.
  std::chrono::milliseconds keep_alive_timeout = std::chrono::seconds(5);
  // Longest silence while a request is being read or a response written before the connection
  // is dropped.
  std::chrono::milliseconds read_timeout = std::chrono::seconds(30);
  size_t max_body_bytes = size_t{16} * 1024 * 1024;
  const Clock* clock = nullptr;  // nullptr: SystemClock.
};

struct NativeRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> path_params;  // {name} -> value (percent-decoded).
  std::multimap<std::string, std::string> query;   // Decoded query parameters.
  std::string body;
  std::string account_id;  // "" on public routes.
  std::string request_id;
  // Request headers with lowercased names (a repeated name keeps its last value).
  std::map<std::string, std::string> headers{};
};

// Writes one chunk of a streamed response body and sends it at once; false once the client has
// gone away (the stream should then stop).
using StreamWriter = std::function<bool(std::string_view)>;

struct NativeResponse {
  int http_status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers{};  // Extra response headers.
  // When set, the body is streamed: `body` is ignored, the status and headers go out first with
  // chunked transfer encoding, then `stream` runs once on the request's worker thread, writing
  // the body through the StreamWriter and returning when it is complete.
  std::function<void(const StreamWriter&)> stream{};
};

using ApiHandler = std::function<ApiResponse(const ApiRequest&)>;
using NativeHandler = std::function<NativeResponse(const NativeRequest&)>;

enum class RouteAuth { kSigV4, kPublic };

class HttpServer {
 public:
  // `credentials` and `metrics` must outlive the server; `credentials` is unused (may be empty)
  // with insecure_no_auth.
  HttpServer(HttpServerOptions options, const aws::Credentials& credentials,
             MetricsRegistry& metrics);
  ~HttpServer();  // Stops and joins.
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void SetApiHandler(ApiHandler handler);
  // `method` is GET, POST, PUT or DELETE.
  void AddRoute(std::string method, const std::string& pattern, RouteAuth auth,
                NativeHandler handler);

  // Binds host:port (port 0: any free port) and starts serving in the background.
  // Returns the bound port. Unavailable if the address cannot be bound. Call once.
  Result<int> Start(const std::string& host, int port);
  void Stop();
  // Blocks until the server stopped serving (after Stop()).
  void Wait();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace carve::server
