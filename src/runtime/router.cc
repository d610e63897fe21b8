#include "runtime/router.h"

#include <future>
#include <memory>
#include <set>
#include <utility>

namespace carve::runtime {

namespace {

constexpr const char* kVariantHeader = "x-Amzn-Invoked-Production-Variant";
constexpr const char* kCustomAttributes = "X-Amzn-SageMaker-Custom-Attributes";

// ^[a-zA-Z0-9](-*[a-zA-Z0-9])*$ with at most 63 characters: the pattern botocore's model gives
// EndpointName and InferenceComponentName.
}  // namespace

// Nothing of an answer arrived: the connection was refused, or it broke (reset, closed) before
// the response's status line, as when a copy dies or restarts under a request. The copy leaves
// the rotation briefly and the request may go to another one, as nginx's proxy_next_upstream
// does for "error" by default. A timeout is not such a failure: the copy may still be working.
bool Router::FailedBeforeAnswering(const CopyReply& reply) {
  return reply.outcome == CopyOutcome::kConnectFailed ||
         (reply.outcome == CopyOutcome::kBroken && reply.status == 0);
}

Router::Next Router::NextAfter(const CopyReply& reply) {
  if (FailedBeforeAnswering(reply)) return Next::kAnotherCopyThisOneOut;
  if (reply.outcome == CopyOutcome::kOk && reply.status >= 500) return Next::kAnotherCopy;
  return Next::kAnswer;
}

void Router::SitOut(const CopyBalancer::Lease& lease) {
  balancer_.Quarantine(lease.copy().id);
  client_.Forget(lease.copy().address);
}

namespace {

bool IsResourceName(const std::string& s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-') return false;
  }
  return true;
}

std::string Header(const http::NativeRequest& r, const std::string& lower_name) {
  auto it = r.headers.find(lower_name);
  return it == r.headers.end() ? "" : it->second;
}

std::string PatternError(const std::string& value, const std::string& member) {
  return "1 validation error detected: Value '" + value + "' at '" + member +
         "' failed to satisfy constraint: Member must satisfy regular expression pattern: "
         "^[a-zA-Z0-9](-*[a-zA-Z0-9])* and have length less than or equal to 63";
}

}  // namespace

Router::Router(CopyDirectory& directory, http::MetricsRegistry& metrics, RouterOptions options)
    : directory_(directory),
      options_(options),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock::Get()),
      requests_(
          metrics.AddCounter("carve_runtime_requests_total",
                             "Runtime invocations by account, endpoint, component and result code.",
                             {"account", "endpoint", "component", "code"})),
      errors_(metrics.AddCounter("carve_runtime_errors_total",
                                 "Failed runtime invocations by account, endpoint, component and "
                                 "error type.",
                                 {"account", "endpoint", "component", "type"})),
      in_flight_(metrics.AddGauge("carve_runtime_in_flight",
                                  "Runtime invocations in progress by account, endpoint and "
                                  "component.",
                                  {"account", "endpoint", "component"})),
      latency_(metrics.AddHistogram("carve_runtime_request_duration_seconds",
                                    "Runtime invocation latency to the last byte.",
                                    {"account", "endpoint", "component"})),
      model_latency_(metrics.AddHistogram(
          "carve_runtime_model_latency_seconds",
          "The answering copy's share of an invocation: from sending it the request to its last "
          "byte (SageMaker's ModelLatency).",
          {"account", "endpoint", "component"})),
      overhead_latency_(metrics.AddHistogram(
          "carve_runtime_overhead_latency_seconds",
          "What the router adds to an answered invocation: resolving, balancing, failed tries, "
          "relaying (SageMaker's OverheadLatency).",
          {"account", "endpoint", "component"})),
      attempts_(metrics.AddCounter("carve_runtime_copy_attempts_total",
                                   "Tries of runtime invocations on each model copy, by outcome "
                                   "(answered, unanswered, 5xx, failed).",
                                   {"account", "component", "copy", "outcome"})),
      retries_(metrics.AddCounter(
          "carve_runtime_retries_total",
          "Runtime invocation tries on another copy after a copy did not answer or answered 5xx.",
          {"account", "endpoint", "component"})),
      no_capacity_(
          metrics.AddCounter("carve_runtime_no_capacity_invocation_failures_total",
                             "Invocations that found no copy of their component in service "
                             "(SageMaker's NoCapacityInvocationFailures).",
                             {"account", "endpoint", "component"})),
      balancer_(clock_, options_.quarantine,
                &metrics.AddGauge("carve_runtime_copy_in_flight",
                                  "Invocations in progress per model copy.",
                                  {"account", "component", "copy"}),
                options_.seed),
      client_({.connect_timeout = options_.connect_timeout}) {}

Router::~Router() = default;

void Router::Begin(const http::NativeRequest& request, Call& call) {
  call.started = clock_.Now();
  call.labels[0] = request.account_id;
}

Result<RouteInfo> Router::Prepare(const http::NativeRequest& request, Call& call, Unnamed unnamed) {
  auto it = request.path_params.find("EndpointName");
  call.endpoint = it == request.path_params.end() ? "" : it->second;
  if (!IsResourceName(call.endpoint))
    return InvalidArgument(PatternError(call.endpoint, "endpointName"));
  const std::string component = Header(request, "x-amzn-sagemaker-inference-component");
  if (request.headers.count("x-amzn-sagemaker-inference-component") != 0 &&
      !IsResourceName(component)) {
    return InvalidArgument(PatternError(component, "inferenceComponentName"));
  }
  if (request.body.size() > options_.max_body_bytes) {
    return InvalidArgument(
        "1 validation error detected: Value at 'body' failed to satisfy "
        "constraint: Member must have length less than or equal to " +
        std::to_string(options_.max_body_bytes) + " (got " + std::to_string(request.body.size()) +
        " bytes)");
  }
  CARVE_ASSIGN_OR_RETURN(RouteInfo route,
                         directory_.Resolve(request.account_id, call.endpoint, component, unnamed));
  call.labels = {request.account_id, call.endpoint, route.component};
  in_flight_.Add(call.labels, 1);
  call.counted_in_flight = true;
  call.key = {request.account_id, call.endpoint, route.component};
  if (options_.stats != nullptr) options_.stats->Started(call.key);
  return route;
}

http::NativeResponse Router::Finish(Call& call, http::NativeResponse response) {
  if (call.finished) return response;
  call.finished = true;
  if (call.counted_in_flight) {
    in_flight_.Add(call.labels, -1);
    if (options_.stats != nullptr) options_.stats->Finished(call.key);
  }
  std::string code = std::to_string(response.http_status);
  for (const auto& [name, value] : response.headers) {
    if (name == "X-Amzn-ErrorType") {
      code = value;
      errors_.Increment({call.labels[0], call.labels[1], call.labels[2], value});
    }
  }
  requests_.Increment({call.labels[0], call.labels[1], call.labels[2], code});
  const double total = std::chrono::duration<double>(clock_.Now() - call.started).count();
  latency_.Observe(call.labels, total);
  if (call.model_seconds >= 0) {
    model_latency_.Observe(call.labels, call.model_seconds);
    overhead_latency_.Observe(call.labels, std::max(0.0, total - call.model_seconds));
  }
  return response;
}

void Router::CountAttempt(const Call& call, const std::string& copy, int attempt,
                          const char* outcome) {
  attempts_.Increment({call.labels[0], call.labels[2], copy, outcome});
  if (attempt > 0) retries_.Increment(call.labels);
}

http::NativeResponse Router::Fail(Call& call, const RuntimeError& error) {
  return Finish(call, ErrorResponse(error));
}

http::NativeResponse Router::NoCopy(Call& call, const RouteInfo& route) {
  if (options_.stats != nullptr) options_.stats->NoCapacity(call.key);
  no_capacity_.Increment(call.labels);
  return Fail(call,
              ModelNotReady("Endpoint " + call.endpoint + " has no copy of " + CopyName(route) +
                            " in service; wait for copies to start and retry."));
}

// One InvokeEndpoint from its resolved route to its answer: each try is an HttpClient call, and
// the next step runs in its completion on the client's loop, so no thread waits for a copy.
struct Router::Invocation {
  Call call;
  RouteInfo route;
  Strategy strategy = Strategy::kLeastOutstandingRequests;
  CopyRequest req;
  std::set<std::string> tried;
  std::optional<CopyReply> last;
  int attempt = 0;
  http::Responder respond;
};

void Router::InvokeAsync(const http::NativeRequest& request, http::Responder respond) {
  auto inv = std::make_shared<Invocation>();
  inv->respond = std::move(respond);
  Begin(request, inv->call);
  auto resolved = Prepare(request, inv->call);
  if (!resolved) return inv->respond(Fail(inv->call, FromError(resolved.error())));
  inv->route = std::move(resolved).value();
  inv->strategy = inv->route.strategy;
  inv->req.body = request.body;
  inv->req.content_type = Header(request, "content-type");
  inv->req.accept = Header(request, "accept");
  inv->req.custom_attributes = Header(request, "x-amzn-sagemaker-custom-attributes");
  inv->req.timeout = inv->route.timeout;
  Try(std::move(inv));
}

void Router::Try(std::shared_ptr<Invocation> inv) {
  std::optional<CopyBalancer::Lease> lease;
  if (inv->attempt < options_.max_attempts) {
    lease = balancer_.Acquire(inv->call.labels[0], inv->route.component, inv->strategy,
                              inv->route.copies, inv->tried);
  }
  if (!lease) return inv->respond(Exhausted(*inv));
  inv->tried.insert(lease->copy().id);
  const std::string address = lease->copy().address;
  const auto sent = clock_.Now();
  auto held = std::make_shared<CopyBalancer::Lease>(std::move(*lease));
  client_.Call(
      address, ToClientRequest(inv->req), [this, inv, held, sent](http::ClientReply reply) mutable {
        const double copy_seconds = std::chrono::duration<double>(clock_.Now() - sent).count();
        auto answer = Judge(*inv, *held, ToCopyReply(std::move(reply)), copy_seconds);
        held.reset();  // The copy's request is over: its in-flight count drops before the next try.
        if (answer) return inv->respond(std::move(*answer));
        ++inv->attempt;
        Try(std::move(inv));
      });
}

std::optional<http::NativeResponse> Router::Judge(Invocation& inv, const CopyBalancer::Lease& lease,
                                                  CopyReply reply, double copy_seconds) {
  Call& call = inv.call;
  const RouteInfo& route = inv.route;
  switch (NextAfter(reply)) {
    case Next::kAnotherCopyThisOneOut:
      CountAttempt(call, lease.copy().id, inv.attempt, "unanswered");
      SitOut(lease);
      inv.last = std::move(reply);
      return std::nullopt;
    case Next::kAnotherCopy:
      CountAttempt(call, lease.copy().id, inv.attempt, "5xx");
      inv.last = std::move(reply);  // Nothing reached the client yet: another copy may answer.
      return std::nullopt;
    case Next::kAnswer:
      break;
  }
  CountAttempt(call, lease.copy().id, inv.attempt,
               reply.outcome == CopyOutcome::kOk ? "answered" : "failed");
  if (reply.outcome != CopyOutcome::kOk || reply.status < 200 || reply.status >= 300) {
    return Fail(call, ModelErrorFor(route, call.endpoint, reply));
  }
  call.model_seconds = copy_seconds;
  http::NativeResponse out;
  out.body = std::move(reply.body);
  out.content_type =
      reply.content_type.empty() ? "application/octet-stream" : std::move(reply.content_type);
  out.headers.emplace_back(kVariantHeader, route.variant);
  if (!reply.custom_attributes.empty()) {
    out.headers.emplace_back(kCustomAttributes, reply.custom_attributes);
  }
  return Finish(call, std::move(out));
}

http::NativeResponse Router::Exhausted(Invocation& inv) {
  Call& call = inv.call;
  const RouteInfo& route = inv.route;
  if (!inv.last && route.copies.empty()) return NoCopy(call, route);
  if (!inv.last) {
    return Fail(call, ModelNotReady("All " + std::to_string(route.copies.size()) + " copies of " +
                                    CopyName(route) + " of endpoint " + call.endpoint +
                                    " are out of rotation after failed connections; retry "
                                    "shortly."));
  }
  if (FailedBeforeAnswering(*inv.last)) {
    return Fail(
        call, ServiceUnavailable("No copy of " + CopyName(route) + " of endpoint " + call.endpoint +
                                 " answered a request (tried " + std::to_string(inv.tried.size()) +
                                 ", last: " + inv.last->detail + "); retry shortly."));
  }
  return Fail(call, ModelErrorFor(route, call.endpoint, *inv.last));
}

http::NativeResponse Router::Invoke(const http::NativeRequest& request) {
  std::promise<http::NativeResponse> answer;
  auto done = answer.get_future();
  InvokeAsync(request, [&answer](http::NativeResponse r) { answer.set_value(std::move(r)); });
  return done.get();
}

void RegisterRuntimeRoutes(http::HttpServer& server, Router& router) {
  // InvokeEndpoint holds no worker while the copy works (InvokeAsync), and its resolve step
  // runs on the server's loop, so a request crosses only to the copy client's loop and back;
  // the streaming routes relay on a worker.
  server.AddAsyncRoute(
      "POST", "/endpoints/{EndpointName}/invocations", http::kForTenants,
      [&router](http::NativeRequest r, http::Responder respond) {
        router.InvokeAsync(r, std::move(respond));
      },
      http::AsyncRouteRuns::kOnLoop);
  server.AddRoute("POST", "/endpoints/{EndpointName}/invocations-response-stream",
                  http::kForTenants,
                  [&router](const http::NativeRequest& r) { return router.InvokeStream(r); });
  const http::Access openai{http::Principal::kTenant, /*endpoint_tokens=*/true};
  server.AddRoute("POST", "/endpoints/{EndpointName}/openai/v1/chat/completions", openai,
                  [&router](const http::NativeRequest& r) { return router.ChatCompletions(r); });
  // Every other path under /openai/ gets OpenAI's 404, once the caller is known, so an OpenAI
  // client shows why instead of "no body".
  for (const char* method : {"GET", "POST", "PUT", "PATCH", "DELETE"}) {
    server.AddRoute(method, "/endpoints/{EndpointName}/openai/{Path+}", openai, &OpenAiUnrouted);
  }
}

}  // namespace carve::runtime
