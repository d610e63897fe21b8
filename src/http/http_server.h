// HttpServer: carve's HTTP/1.1 front end, serving the SageMaker awsJson1_1 protocol, carve's
// native JSON routes, the runtime API, /metrics and /ping on one listener.
//
// Shape: one event loop (Boost.Asio, one thread) owns every connection: it accepts, reads and
// parses requests with Boost.Beast's incremental parser, enforces the deadlines below and writes
// responses. A connection costs memory only (about a kilobyte while idle), never a thread, so
// idle keep-alive connections and long-polls cost nothing but that. Handlers run on a bounded
// pool of worker threads (`threads`), not on the loop, so a handler may block on a Store
// commit; a handler that must wait for an event (an agent's long-poll, a copy's answer) is an
// async route and gives its Responder back later from any thread, holding no worker meanwhile.
// An async route registered kOnLoop (InvokeEndpoint) runs its handler on the loop itself: it
// only resolves and hands off, so its requests cross no thread on the way in.
//
// Limits, each with an answer a client can read:
//   - a request's headers must arrive within header_timeout of its first byte (of the
//     connection's start, for a new one), and its body within body_timeout of the headers: a
//     slow sender is closed;
//   - at most max_connections connections are open, and at most max_connections_per_client
//     from one client address; the next one gets 503 with the reason and is closed, never left
//     hanging;
//   - at most max_queued_requests requests wait for a worker; the next gets 503 ("busy");
//   - headers over 64 KiB or over 128 fields get 431, and a body over max_body_bytes 413, after
//     which the rest of the request is read and discarded (a lingering close, up to 64 MiB or
//     5 s), so the client finishes sending and reads the answer instead of a reset connection;
//   - a malformed request gets 400 and the connection is closed.
// Malformed requests get 400, `Expect: 100-continue` gets its interim 100, pipelined requests
// are answered in order, and every response carries an `x-amzn-RequestId` (a fresh UUID).
// With `tls` set the listener speaks HTTPS only (tls_context.h): each connection's handshake must
// finish, and its first request's headers arrive, within header_timeout of the accept; every
// other limit holds as on plain HTTP, except that a connection over a cap is closed without the
// 503 (a TLS client could not read a plain one), and plain HTTP sent to it gets a plain 400.
//  - `POST /` with `X-Amz-Target: SageMaker.<Op>`: SigV4-verified (unless insecure_no_auth), then
//    handed to the ApiHandler with the caller's account id; the ApiResponse is written back with
//    Content-Type application/x-amz-json-1.1 (and X-Amzn-Errortype + "__type" when error_type is
//    set). A missing or foreign X-Amz-Target -> 400 UnknownOperationException. Auth failures ->
//    403 {"__type": ..., "message": ...}. Every SageMaker call is counted in
//    carve_api_requests_total{operation,code} and timed in carve_api_request_duration_seconds
//    {operation} (code = "200" or the error type).
//  - Native routes: method + pattern like "/v1/endpoints/{name}/carve" ({x} matches one non-empty
//    path segment), each with the principals it serves (principals.h). A caller proves what it
//    is with a SigV4 signature (service as configured; the key's credentials section says tenant
//    or operator), an endpoint's bearer token (routes with endpoint_tokens), the scrape token, or
//    nothing (routes that serve anonymous callers, which get account_id ""). A caller the route
//    does not serve gets 403 AccessDeniedException naming the route and whom it serves.
//  - GET /metrics (registry exposition: scrapers and operators, or anyone with public_metrics)
//    and GET /ping (anyone) are built in. The front end's own gauges:
//    carve_http_connections, carve_http_requests_queued, and the counter
//    carve_http_connections_refused_total{reason}.
// Lifecycle: configure (SetApiHandler/AddRoute) before Start; Start binds, listens and serves on
// background threads; Stop() is idempotent, thread-safe and async-signal-safe (one write() to a
// pipe), so a SIGTERM handler may call it. After Stop() no new connection is accepted, idle
// connections close at once, a request in progress is answered (with Connection: close), and an
// async request still waiting is answered 503; Wait() returns when that is done. Stop() before
// Start() has no effect.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "aws/credentials.h"
#include "common/clock.h"
#include "common/result.h"
#include "http/api.h"
#include "http/metrics.h"
#include "http/principals.h"
#include "http/tls_context.h"

namespace carve::http {

struct HttpServerOptions {
  // Skip SigV4 and treat every caller as `insecure_account_id` (logs a warning at Start).
  bool insecure_no_auth = false;
  std::string insecure_account_id = std::string(aws::kDefaultAccountId);
  std::string signing_service = "sagemaker";  // Service name required in the scope.
  // The server's region (`carve server --region`): the only one a signature's or an endpoint
  // bearer token's credential scope may name (aws/sigv4.h).
  std::string region = "us-east-1";
  // Whether the endpoint bearer token with this id (aws::VerifiedBearer::id) was revoked
  // (runtime/bearer_revocations.h); asked after its signature verified, on every request, so a
  // revocation takes effect at once. Unset: none is.
  std::function<bool(std::string_view token_id)> bearer_token_revoked{};
  // Whether `Authorization: Bearer <token>` carries the scrape token (a Prometheus scraper, on
  // GET /metrics). Unset: no scrape token is accepted. Asked on every scrape, so a rotated token
  // takes effect at once.
  std::function<bool(std::string_view token)> scrape_token_ok{};
  // Node identity (nodes/node_identity.h): the node id a bearer node credential is bound to, and
  // the id of a valid bootstrap token; nullopt refuses it. Unset: no node credential or bootstrap
  // token is accepted. Asked on every request, so a revocation takes effect at once.
  std::function<std::optional<std::string>(std::string_view credential)> node_credential_ok{};
  std::function<std::optional<std::string>(std::string_view token)> bootstrap_token_ok{};
  // GET /metrics for anyone, without a credential (`carve server --public-metrics`). Otherwise
  // it serves scrapers and operators.
  bool public_metrics = false;
  std::chrono::seconds max_clock_skew = std::chrono::minutes(15);
  // Worker threads that run handlers (blocking ones: Store commits, the router's copy calls).
  int threads = 128;
  // How long an idle keep-alive connection is kept; clients (urllib3) reconnect transparently
  // when an idle one was closed.
  std::chrono::milliseconds keep_alive_timeout = std::chrono::seconds(5);
  // A request's headers must arrive within this of its first byte (a new connection's: of the
  // accept), and its body within body_timeout of the headers.
  std::chrono::milliseconds header_timeout = std::chrono::seconds(10);
  std::chrono::milliseconds body_timeout = std::chrono::seconds(60);
  // Longest a response may take to be written before the connection is dropped.
  std::chrono::milliseconds write_timeout = std::chrono::seconds(30);
  size_t max_body_bytes = size_t{16} * 1024 * 1024;
  // Open connections at most; Start raises the process's descriptor limit to fit when it can.
  int max_connections = 16384;
  // Open connections from one client address at most, so one client cannot take them all. Three
  // quarters of max_connections: carve fleet-sim's 5,000 agents hold 10,000 from loopback.
  int max_connections_per_client = 12288;
  // Requests waiting for a worker at most.
  int max_queued_requests = 16384;
  // HTTPS: the certificate and key every connection's handshake uses. Null: plain HTTP.
  std::shared_ptr<const TlsContext> tls{};
  const Clock* clock = nullptr;  // nullptr: SystemClock.
};

struct NativeRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> path_params;  // {name} -> value (percent-decoded).
  std::multimap<std::string, std::string> query;   // Decoded query parameters.
  std::string body;
  std::string account_id;  // "" on public routes and for a scraper.
  Principals caller;       // What the caller proved to be (principals.h).
  // kSigV4OrBearer routes called with a bearer token limited to one endpoint: that endpoint.
  std::string bearer_endpoint;
  // A node's credential: the node id it is bound to. A joiner: the bootstrap token's id.
  std::string node_id;
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
  // chunked transfer encoding, then `stream` runs once on a worker thread, writing the body
  // through the StreamWriter (each call returns once its chunk is written, or false when the
  // client is gone) and returning when it is complete.
  std::function<void(const StreamWriter&)> stream{};
};

// A request as it arrived, for a Forwarder: path and query still percent-encoded.
struct RawRequest {
  std::string method;
  std::string path;                                          // Without the query.
  std::string query;                                         // Without '?'.
  std::vector<std::pair<std::string, std::string>> headers;  // Names as sent.
  std::string body;
  // The value of header `name` in any case, or "".
  std::string Header(std::string_view name) const;
};

// For a replica that serves only part of the API itself (a standby, app/replica_forwarder.h).
// While `active()` returns true, every request runs on a worker (no route runs on the loop) and
// is given to `forward` first, before authentication: it answers the request (it sent it on to
// the leader) or returns nullopt to have it served here as usual. `active` is asked for every
// request and must be cheap.
struct Forwarder {
  std::function<bool()> active;
  std::function<std::optional<NativeResponse>(const RawRequest&)> forward;
};

using ApiHandler = std::function<ApiResponse(const ApiRequest&)>;
using NativeHandler = std::function<NativeResponse(const NativeRequest&)>;
// Completes an async request; call it once, from any thread. Calls after the first, or after
// the server answered the request itself (Stop), are ignored.
using Responder = std::function<void(NativeResponse)>;
// An async route's handler: it must not block, and must make sure `respond` is called (a
// waiter with a deadline). It runs on a worker thread, or with kOnLoop on the event loop itself
// (authentication included): for a handler that only looks something up and hands the request
// off, so that the request crosses no thread (InvokeEndpoint).
using AsyncHandler = std::function<void(NativeRequest request, Responder respond)>;
enum class AsyncRouteRuns { kOnWorker, kOnLoop };

// One row of the route table: what a route is and whom it serves.
struct RouteInfo {
  std::string method;
  std::string pattern;
  Access access;
};

class HttpServer {
 public:
  // `credentials` and `metrics` must outlive the server; `credentials` is unused (may be empty)
  // with insecure_no_auth.
  HttpServer(HttpServerOptions options, const aws::Credentials& credentials,
             MetricsRegistry& metrics);
  ~HttpServer();  // Stops and joins.
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The SageMaker API: X-Amz-Target "SageMaker.<Operation>".
  void SetApiHandler(ApiHandler handler);
  // Another awsJson1.1 service on the same `POST /`, by its X-Amz-Target prefix (with the dot:
  // "AnyScaleFrontendService." for Application Auto Scaling) and the SigV4 service its requests
  // are signed for ("application-autoscaling").
  void AddApiHandler(std::string target_prefix, std::string signing_service, ApiHandler handler);
  // `method` is GET, POST, PUT or DELETE. `access` names the principals the route serves; every
  // other caller is refused (401/403 in the route's error shape) before the handler runs, and
  // Start fails for a route that serves nobody.
  void AddRoute(std::string method, const std::string& pattern, Access access,
                NativeHandler handler);
  void AddAsyncRoute(std::string method, const std::string& pattern, Access access,
                     AsyncHandler handler, AsyncRouteRuns runs = AsyncRouteRuns::kOnWorker);
  // Every route and whom it serves: the API's `POST /`, the built-in /ping and /metrics, and
  // those added. For `GET /v1/routes` and the test that walks it.
  std::vector<RouteInfo> Routes() const;

  // At most one; before Start.
  void SetForwarder(Forwarder forwarder);

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

}  // namespace carve::http
