// InvokeEndpointWithResponseStream. The copy is read by the HttpClient's loop (Upstream) while
// the request's worker thread waits for the copy's status: the downstream status must be chosen
// before any byte is sent, so a connect failure or a 5xx can still move to another copy and a
// non-2xx answer can still become a plain ModelError. After a 2xx the worker relays queued
// chunks as event-stream frames.
#include <optional>
#include <set>
#include <utility>

#include "runtime/router.h"
#include "runtime/router_upstream.h"
#include "runtime/stream_relay.h"

namespace carve::runtime {

std::optional<Router::Opened> Router::OpenStream(Call& call, const RouteInfo& route,
                                                 Strategy strategy, const CopyRequest& req,
                                                 std::set<std::string>& tried,
                                                 std::optional<CopyReply>& unanswered,
                                                 std::optional<RuntimeError>& failed) {
  std::optional<Opened> last_5xx;  // Answered whole: it is the answer when no copy is left.
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    auto lease = balancer_.Acquire(call.labels[0], route.component, strategy, route.copies, tried);
    if (!lease) break;
    tried.insert(lease->copy().id);
    const auto sent = clock_.Now();
    auto upstream = std::make_shared<Upstream>(client_, lease->copy().address, req);
    CopyReply head = upstream->WaitForHead();
    if (upstream->HasHead() && head.status >= 500) head = upstream->WaitDone();
    switch (NextAfter(head)) {
      case Next::kAnotherCopyThisOneOut:
        CountAttempt(call, lease->copy().id, attempt, "unanswered");
        SitOut(*lease);
        unanswered = std::move(head);
        continue;
      case Next::kAnotherCopy:
        CountAttempt(call, lease->copy().id, attempt, "5xx");
        last_5xx = Opened{CopyBalancer::Lease(), std::move(upstream), std::move(head), sent};
        continue;  // Its lease ends here: that copy's request is over.
      case Next::kAnswer:
        break;
    }
    if (!upstream->HasHead()) {
      CountAttempt(call, lease->copy().id, attempt, "failed");
      failed = ModelErrorFor(route, call.endpoint, head);
      return std::nullopt;
    }
    CountAttempt(call, lease->copy().id, attempt, "answered");
    return Opened{std::move(*lease), std::move(upstream), std::move(head), sent};
  }
  return last_5xx;
}

http::NativeResponse Router::InvokeStream(const http::NativeRequest& request) {
  auto call = std::make_shared<Call>();
  Begin(request, *call);
  auto resolved = Prepare(request, *call);
  if (!resolved) return Fail(*call, FromError(resolved.error()));
  const RouteInfo route = *resolved;
  const Strategy strategy = route.strategy;

  CopyRequest req;
  req.body = request.body;
  auto header = [&](const char* name) {
    auto it = request.headers.find(name);
    return it == request.headers.end() ? std::string() : it->second;
  };
  req.content_type = header("content-type");
  req.accept = header("x-amzn-sagemaker-accept");
  req.custom_attributes = header("x-amzn-sagemaker-custom-attributes");
  req.timeout = route.timeout;

  std::set<std::string> tried;
  std::optional<CopyReply> unanswered;  // The last copy that failed before answering.
  std::optional<RuntimeError> failed;
  if (auto opened = OpenStream(*call, route, strategy, req, tried, unanswered, failed)) {
    const std::shared_ptr<Upstream> upstream = opened->upstream;
    const CopyReply& head = opened->head;
    const auto sent = opened->sent;
    if (head.status < 200 || head.status >= 300) {
      return Fail(*call, ModelErrorFor(route, call->endpoint, upstream->WaitDone()));
    }
    http::NativeResponse out;
    out.content_type = "application/vnd.amazon.eventstream";
    out.headers.emplace_back("x-Amzn-Invoked-Production-Variant", route.variant);
    if (!head.content_type.empty()) {
      out.headers.emplace_back("X-Amzn-SageMaker-Content-Type", head.content_type);
    }
    if (!head.custom_attributes.empty()) {
      out.headers.emplace_back("X-Amzn-SageMaker-Custom-Attributes", head.custom_attributes);
    }
    const bool sse = head.content_type.rfind("text/event-stream", 0) == 0;
    auto held = std::make_shared<CopyBalancer::Lease>(std::move(opened->lease));
    // Accounts for the call even if the server never runs the stream (client already gone).
    std::shared_ptr<void> finisher(nullptr, [this, call](void*) {
      if (!call->finished) Finish(*call, http::NativeResponse{});
    });
    out.stream = [this, call, upstream, held, finisher, sse,
                  sent](const http::StreamWriter& write) {
      StreamRelay relay(sse);
      CopyReply final;
      bool client_ok = true;
      while (auto chunk = upstream->Next(final)) {
        std::string frames = relay.Feed(*chunk);
        if (!frames.empty() && !(client_ok = write(frames))) break;
        if (relay.failed()) break;
      }
      if (client_ok && !relay.failed()) {
        std::string tail = relay.Finish(final.outcome, final.detail);
        if (!tail.empty()) write(tail);
      }
      *held = CopyBalancer::Lease();  // The copy is free once its stream ended.
      call->model_seconds = std::chrono::duration<double>(clock_.Now() - sent).count();
      http::NativeResponse done;
      if (relay.failed()) done.headers.emplace_back("X-Amzn-ErrorType", "ModelStreamError");
      Finish(*call, std::move(done));
    };
    return out;
  }
  if (failed) return Fail(*call, *failed);
  if (!unanswered && route.copies.empty()) return NoCopy(*call, route);
  if (!unanswered) {
    return Fail(*call, ModelNotReady("Endpoint " + call->endpoint + " has no copy of " +
                                     CopyName(route) + " in rotation; retry shortly."));
  }
  return Fail(
      *call, ServiceUnavailable("No copy of " + CopyName(route) + " of endpoint " + call->endpoint +
                                " answered a request (tried " + std::to_string(tried.size()) +
                                ", last: " + unanswered->detail + "); retry shortly."));
}

}  // namespace carve::runtime
