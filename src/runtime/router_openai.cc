// The OpenAI-compatible route, POST /endpoints/{EndpointName}/openai/v1/chat/completions, as
// SageMaker AI documents it ("Invoke endpoints with OpenAI-compatible APIs",
// docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-openai-compatible.html): the
// endpoint is named in the URL, the body is a Chat Completions request that goes to the copy's
// POST /v1/chat/completions unchanged, and the copy's answer comes back as it is, server-sent
// events included. It goes through the same resolution, balancing, retries before the first
// byte, metrics and autoscaling signals as InvokeEndpoint. The inference component is the
// X-Amzn-SageMaker-Inference-Component header, else the body's "model" when it names one of the
// endpoint's components, else the endpoint's only one. carve's own errors are in OpenAI's shape
// ({"error": {"message", "type", "param", "code"}}, code being SageMaker's error type); a copy's
// own non-2xx answer passes through.
#include <nlohmann/json.hpp>
#include <set>

#include "common/bounded_json.h"
#include "runtime/router.h"
#include "runtime/router_upstream.h"

namespace carve::runtime {
namespace {

using nlohmann::json;

constexpr char kChatPath[] = "/v1/chat/completions";

std::string Header(const http::NativeRequest& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? std::string() : it->second;
}

// OpenAI's error types, by status.
std::string_view OpenAiType(int status) {
  if (status == 401 || status == 403) return "authentication_error";
  if (status == 404) return "not_found_error";
  if (status == 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

http::NativeResponse OpenAiError(int status, const std::string& code, const std::string& message,
                                 std::string_view type) {
  http::NativeResponse r;
  r.http_status = status;
  r.content_type = "application/json";
  // A message may quote the caller's bytes (a path): never let them throw.
  r.body =
      json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}}
          .dump(-1, ' ', false, json::error_handler_t::replace);
  r.headers.emplace_back("X-Amzn-ErrorType", code);
  return r;
}

http::NativeResponse OpenAiError(int status, const std::string& code, const std::string& message) {
  return OpenAiError(status, code, message, OpenAiType(status));
}

}  // namespace

http::NativeResponse OpenAiUnrouted(const http::NativeRequest& request) {
  // OpenAI answers a path it does not have with 404 invalid_request_error "Invalid URL (GET
  // /v1/models)"; the SageMaker route serves chat completions only. The path is the caller's:
  // quoted, cut to a bounded length.
  auto rest = request.path_params.find("Path");
  std::string path = "/" + (rest == request.path_params.end() ? std::string() : rest->second);
  constexpr size_t kQuoted = 200;
  if (path.size() > kQuoted) path = path.substr(0, kQuoted) + "...";
  return OpenAiError(404, "UnknownOperationException",
                     "Invalid URL (" + request.method + " " + path +
                         "): carve's OpenAI-compatible route serves POST "
                         "/endpoints/{EndpointName}/openai/v1/chat/completions only, as SageMaker "
                         "does",
                     "invalid_request_error");
}

http::NativeResponse Router::OpenAiFail(Call& call, const RuntimeError& error) {
  return Finish(call, OpenAiError(error.http_status, error.type, error.message));
}

http::NativeResponse Router::ChatCompletions(const http::NativeRequest& request) {
  auto call = std::make_shared<Call>();
  Begin(request, *call);
  // Parsed only to read "model"; the bytes are forwarded as they came. Bounded nesting, no
  // repeated keys (common/bounded_json.h).
  Result<json> parsed = ParseJson(request.body);
  if (!parsed.has_value()) {
    return OpenAiFail(*call, ValidationError("The request body " + parsed.error().message));
  }
  const json& body = *parsed;
  if (!body.is_object()) {
    return OpenAiFail(*call, ValidationError("The request body must be a JSON object: a Chat "
                                             "Completions request"));
  }
  auto ep = request.path_params.find("EndpointName");
  if (!request.bearer_endpoint.empty() && ep != request.path_params.end() &&
      ep->second != request.bearer_endpoint) {
    return Finish(*call, OpenAiError(403, "AccessDeniedException",
                                     "The bearer token may invoke endpoint " +
                                         request.bearer_endpoint + " only, not " + ep->second));
  }
  // Clients send the model's own name ("meta-llama/..."), which names no component: then the
  // endpoint's only component serves, as docs/api.md says.
  auto resolved = Prepare(RoutedByModel(request, body), *call, Unnamed::kTheOnlyComponent);
  if (!resolved) return OpenAiFail(*call, FromError(resolved.error()));
  const RouteInfo& route = *resolved;

  CopyRequest req;
  req.path = kChatPath;
  req.body = request.body;
  req.content_type = "application/json";
  req.accept = Header(request, "accept");
  req.timeout = route.timeout;
  std::set<std::string> tried;
  std::optional<CopyReply> unanswered;
  std::optional<RuntimeError> failed;
  if (auto opened = OpenStream(*call, route, route.strategy, req, tried, unanswered, failed)) {
    return RelayChat(call, route, std::move(*opened), body.value("stream", false));
  }
  if (failed) return OpenAiFail(*call, *failed);
  if (!unanswered && route.copies.empty()) {
    if (options_.stats != nullptr) options_.stats->NoCapacity(call->key);
    no_capacity_.Increment(call->labels);
    return OpenAiFail(
        *call, ModelNotReady("Endpoint " + call->endpoint + " has no copy of " + CopyName(route) +
                             " in service; wait for copies to start and retry."));
  }
  if (!unanswered) {
    return OpenAiFail(
        *call, ModelNotReady("All copies of " + CopyName(route) + " of endpoint " + call->endpoint +
                             " are out of rotation; retry shortly."));
  }
  return OpenAiFail(
      *call, ServiceUnavailable("No copy of " + CopyName(route) + " of endpoint " + call->endpoint +
                                " answered a request (tried " + std::to_string(tried.size()) +
                                ", last: " + unanswered->detail + "); retry shortly."));
}

http::NativeRequest Router::RoutedByModel(const http::NativeRequest& request, const json& body) {
  http::NativeRequest routed = request;
  const std::string kComponentHeader = "x-amzn-sagemaker-inference-component";
  auto ep = request.path_params.find("EndpointName");
  if (Header(request, kComponentHeader).empty() && body.contains("model") &&
      body["model"].is_string() && ep != request.path_params.end()) {
    const std::string model = body["model"];
    if (!model.empty() &&
        directory_.Resolve(request.account_id, ep->second, model, Unnamed::kRefused)) {
      routed.headers[kComponentHeader] = model;
    }
  }
  return routed;
}

http::NativeResponse Router::RelayChat(std::shared_ptr<Call> call, const RouteInfo& route,
                                       Opened opened, bool stream) {
  const std::shared_ptr<Upstream> upstream = opened.upstream;
  const CopyReply& head = opened.head;
  const auto sent = opened.sent;
  http::NativeResponse out;
  out.http_status = head.status;
  out.content_type = head.content_type.empty() ? "application/json" : head.content_type;
  out.headers.emplace_back("x-Amzn-Invoked-Production-Variant", route.variant);
  if (!stream || head.status < 200 || head.status >= 300) {
    // The whole answer, as the copy gave it (its own errors included).
    std::string whole;
    CopyReply final;  // Drained first: the reader waits while 4 MiB are queued.
    while (auto chunk = upstream->Next(final)) whole += *chunk;
    out.body = head.status >= 200 && head.status < 300 ? std::move(whole) : final.body;
    if (final.outcome != CopyOutcome::kOk) {
      return OpenAiFail(*call, ModelErrorFor(route, call->endpoint, final));
    }
    call->model_seconds = std::chrono::duration<double>(clock_.Now() - sent).count();
    return Finish(*call, std::move(out));
  }
  // Server-sent events, passed through byte for byte.
  auto held = std::make_shared<CopyBalancer::Lease>(std::move(opened.lease));
  std::shared_ptr<void> finisher(nullptr, [this, call](void*) {
    if (!call->finished) Finish(*call, http::NativeResponse{});
  });
  out.stream = [this, call, upstream, held, finisher, sent](const http::StreamWriter& write) {
    CopyReply final;
    while (auto chunk = upstream->Next(final)) {
      if (!write(*chunk)) break;
    }
    *held = CopyBalancer::Lease();
    call->model_seconds = std::chrono::duration<double>(clock_.Now() - sent).count();
    http::NativeResponse done;
    if (final.outcome != CopyOutcome::kOk) {
      done.headers.emplace_back("X-Amzn-ErrorType", "ModelStreamError");
    }
    Finish(*call, std::move(done));
  };
  return out;
}

}  // namespace carve::runtime
