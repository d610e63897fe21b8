// Router: the SageMaker runtime API. It serves
//   POST /endpoints/{EndpointName}/invocations                  (InvokeEndpoint)
//   POST /endpoints/{EndpointName}/invocations-response-stream  (InvokeEndpointWithResponseStream)
// on the control plane's listener, SigV4-verified and scoped to the caller's account. The
// target component is named by X-Amzn-SageMaker-Inference-Component; the CopyDirectory resolves
// it to the copies in rotation, a CopyBalancer picks one, and the body, Content-Type and Accept
// (X-Amzn-SageMaker-Accept when streaming) go to that copy's POST /invocations. Responses carry
// x-Amzn-Invoked-Production-Variant.
//
// Errors (runtime_error.h): directory errors map through FromError (unknown endpoint, missing or
// unknown component -> ValidationError 400); no copy in rotation ->
// ModelNotReadyException 429; every attempt failed to connect -> ServiceUnavailable 503; the copy
// answered non-2xx, timed out or broke off -> ModelError 424 (OriginalStatusCode and
// OriginalMessage when it answered).
// Retries, one rule for every route (NextAfter): a request moves to another copy (up to
// max_attempts copies) only while nothing has reached the client: after a failure before the
// status line (the copy is also quarantined), or after a 5xx answer. A stream whose copy fails
// after its 2xx headers ends with a ModelStreamError frame; one whose copy answers non-2xx before
// any byte gets a ModelError.
// Metrics, each series labelled first by the caller's account, since two accounts may both
// have an endpoint `ep` with a component `ic` (the operator's /metrics tells them apart, and the
// dashboard shows each tenant only its own): carve_runtime_requests_total{account,endpoint,
// component,code}, carve_runtime_errors_total{account,endpoint,component,type},
// carve_runtime_in_flight{account,endpoint,component},
// carve_runtime_request_duration_seconds{account,endpoint,component} (to the last byte), split for
// the requests a copy answered into carve_runtime_model_latency_seconds (the copy's time, from
// sending it the request to its last byte) and carve_runtime_overhead_latency_seconds (the
// rest: resolving, balancing, tries that failed, relaying), with the same labels;
// carve_runtime_copy_in_flight{account,component,copy},
// carve_runtime_copy_attempts_total{account,component,copy,outcome}: each try of a request on a
// copy, by outcome: "answered" (a status below 500), "unanswered" (refused, or broken before the
// status line: the request moved on), "5xx" (InvokeEndpoint moves on to another copy), "failed"
// (timed out, or broke after the status line);
// carve_runtime_retries_total{account,endpoint,component}: tries beyond each request's first;
// carve_runtime_no_capacity_invocation_failures_total{account,endpoint,component}: invocations
// that found no copy in service (SageMaker's NoCapacityInvocationFailures). A request refused
// before its endpoint resolved counts under its account with endpoint and component "".
// Thread-safe; the directory and metrics registry must outlive the router.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "common/clock.h"
#include "http/http_server.h"
#include "http/metrics.h"
#include "runtime/copy_balancer.h"
#include "runtime/copy_call.h"
#include "runtime/copy_directory.h"
#include "runtime/invocation_stats.h"
#include "runtime/runtime_error.h"

namespace carve::runtime {

struct RouterOptions {
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds quarantine{5000};  // A copy that refused a connection sits out.
  int max_attempts = 3;                        // Copies tried per request.
  size_t max_body_bytes = 6291456;             // InvokeEndpoint's documented payload limit.
  const Clock* clock = nullptr;                // nullptr: SystemClock.
  uint64_t seed = 0;                           // Tie-breaking RNG; 0: random.
  InvocationStats* stats = nullptr;            // Autoscaling's signals; nullptr: none kept.
};

class Router {
 public:
  Router(CopyDirectory& directory, http::MetricsRegistry& metrics, RouterOptions options = {});
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Handlers for the two routes; `request.path_params` holds "EndpointName".
  http::NativeResponse Invoke(const http::NativeRequest& request);
  // InvokeEndpoint without a thread: `respond` runs once, on this thread when the answer is
  // known at once (a bad request, no copy), else on the copy client's event loop. Invoke is
  // this, waited for.
  void InvokeAsync(const http::NativeRequest& request, http::Responder respond);
  http::NativeResponse InvokeStream(const http::NativeRequest& request);
  // POST /endpoints/{EndpointName}/openai/v1/chat/completions (router_openai.cc).
  http::NativeResponse ChatCompletions(const http::NativeRequest& request);

  const CopyBalancer& balancer() const { return balancer_; }

 private:
  // One invocation's bookkeeping, from Prepare to Finish.
  struct Call {
    std::chrono::steady_clock::time_point started;
    std::string endpoint;  // As requested.
    // {account, endpoint, component}: the caller's account from the start, the endpoint and
    // component once resolved ("" before).
    http::LabelValues labels{"", "", ""};
    InvocationStats::Key key;  // For options_.stats, once resolved.
    // The copy's own share of the time: from sending the request to the copy that answered
    // until its last byte (SageMaker's ModelLatency); < 0 when no copy answered.
    double model_seconds = -1;
    bool counted_in_flight = false;
    bool finished = false;
  };
  class Upstream;
  struct Invocation;
  // Starts `call` for `request`'s caller: its clock and its account label.
  void Begin(const http::NativeRequest& request, Call& call);
  // The next try of `inv` on a copy not tried yet, or its final answer when none is left.
  void Try(std::shared_ptr<Invocation> inv);
  // What a try's reply means: the answer to send, or nullopt to try another copy.
  std::optional<http::NativeResponse> Judge(Invocation& inv, const CopyBalancer::Lease& lease,
                                            CopyReply reply, double copy_seconds);
  // The answer when no copy is left to try.
  http::NativeResponse Exhausted(Invocation& inv);
  // A streamed request whose copy sent its status line.
  struct Opened {
    CopyBalancer::Lease lease;
    std::shared_ptr<Upstream> upstream;
    CopyReply head;
    std::chrono::steady_clock::time_point sent;  // When the request went to that copy.
  };
  // Tries the route's copies in turn (up to max_attempts) by NextAfter until one answers: a
  // 2xx, or the last 5xx when no copy is left to try (whole, with its body), counting each try.
  // nullopt when none did: `failed` is then the ModelError of a copy that timed out or broke off
  // after connecting, or else `unanswered` the last copy that did not answer (empty when no copy
  // was tried). Shared by the two streaming routes.
  std::optional<Opened> OpenStream(Call& call, const RouteInfo& route, Strategy strategy,
                                   const CopyRequest& req, std::set<std::string>& tried,
                                   std::optional<CopyReply>& unanswered,
                                   std::optional<RuntimeError>& failed);
  // The OpenAI route: the request with the component header its body's "model" names, when that
  // is a component of the endpoint; else as it came.
  http::NativeRequest RoutedByModel(const http::NativeRequest& request, const nlohmann::json& body);
  // The OpenAI route's answer from the copy that opened: whole, or its server-sent events
  // passed through as they come when the request asked to `stream` and the copy said 2xx.
  http::NativeResponse RelayChat(std::shared_ptr<Call> call, const RouteInfo& route, Opened opened,
                                 bool stream);
  // True when no byte of an answer arrived (refused, or broken before the status line).
  static bool FailedBeforeAnswering(const CopyReply& reply);
  // The one retry rule, for unary and streamed calls alike: a try moves on to another copy
  // only while nothing has reached the client, after a failure before the status line (and the
  // copy sits out its quarantine) or a 5xx answer (a streamed one's body is buffered, not
  // relayed). Anything else is the answer, an error included.
  enum class Next { kAnswer, kAnotherCopy, kAnotherCopyThisOneOut };
  static Next NextAfter(const CopyReply& reply);
  // Takes the copy out of rotation for the quarantine and drops its idle connections.
  void SitOut(const CopyBalancer::Lease& lease);
  Result<RouteInfo> Prepare(const http::NativeRequest& request, Call& call,
                            Unnamed unnamed = Unnamed::kRefused);
  http::NativeResponse Finish(Call& call, http::NativeResponse response);
  // Counts one try on `copy` (and a retry when it was not the request's first).
  void CountAttempt(const Call& call, const std::string& copy, int attempt, const char* outcome);
  http::NativeResponse Fail(Call& call, const RuntimeError& error);
  // The same, in OpenAI's error shape.
  http::NativeResponse OpenAiFail(Call& call, const RuntimeError& error);
  // ModelNotReady for a request that found no copy in service: also a NoCapacityInvocationFailure.
  http::NativeResponse NoCopy(Call& call, const RouteInfo& route);

  CopyDirectory& directory_;
  const RouterOptions options_;
  const Clock& clock_;
  http::Counter& requests_;
  http::Counter& errors_;
  http::Gauge& in_flight_;
  http::Histogram& latency_;
  http::Histogram& model_latency_;
  http::Histogram& overhead_latency_;
  http::Counter& attempts_;
  http::Counter& retries_;
  http::Counter& no_capacity_;
  CopyBalancer balancer_;
  http::HttpClient client_;
};

// The answer to any path under /endpoints/{EndpointName}/openai/ other than chat completions:
// OpenAI's 404 ("Invalid URL (METHOD /path)", invalid_request_error).
http::NativeResponse OpenAiUnrouted(const http::NativeRequest& request);

// Adds the runtime routes to `server` (InvokeEndpoint and its stream for tenants, the
// OpenAI-compatible route accepting endpoint tokens, OpenAI's 404 for the rest of its paths);
// call before server.Start().
void RegisterRuntimeRoutes(http::HttpServer& server, Router& router);

}  // namespace carve::runtime
