// InvokeEndpointWithResponseStream. The copy is read on a helper thread (cpp-httplib's client
// blocks for the whole response) while the request's worker thread waits for the copy's status:
// the downstream status must be chosen before any byte is sent, so a connect failure can still
// move to another copy and a non-2xx answer can still become a plain ModelError. After a 2xx
// the worker relays queued chunks as event-stream frames.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "server/runtime/router.h"
#include "server/runtime/stream_relay.h"

namespace carve::server::runtime {

namespace {
constexpr size_t kMaxQueuedBytes = size_t{4} * 1024 * 1024;  // Back-pressure on the copy.
}  // namespace

// The copy's side of one streamed invocation. Destruction tells the reader the client is gone
// (its next callback aborts the copy's request) and joins it.
class Router::Upstream {
 public:
  Upstream(CopyClient& client, std::string address, CopyRequest request) {
    thread_ =
        std::thread([this, &client, address = std::move(address), request = std::move(request)] {
          CopyReply final = client.Stream(
              address, request,
              [this](const CopyReply& head) {
                std::lock_guard lock(mu_);
                head_ = head;
                have_head_ = true;
                cv_.notify_all();
                return !client_gone_;
              },
              [this](std::string_view data) {
                std::unique_lock lock(mu_);
                cv_.wait(lock, [&] { return queued_bytes_ < kMaxQueuedBytes || client_gone_; });
                if (client_gone_) return false;
                queued_bytes_ += data.size();
                chunks_.emplace_back(data);
                cv_.notify_all();
                return true;
              });
          std::lock_guard lock(mu_);
          final_ = std::move(final);
          done_ = true;
          cv_.notify_all();
        });
  }

  ~Upstream() {
    {
      std::lock_guard lock(mu_);
      client_gone_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

  // Blocks until the copy's status arrived or the request ended without one; returns the
  // headers, or the final reply (outcome/detail) when none came.
  CopyReply WaitForHead() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return have_head_ || done_; });
    return have_head_ ? head_ : final_;
  }
  bool HasHead() {
    std::lock_guard lock(mu_);
    return have_head_;
  }
  // Waits for the whole (non-2xx) reply.
  CopyReply WaitDone() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return final_;
  }
  // Next chunk, or nullopt at the end (then `final` holds how it ended).
  std::optional<std::string> Next(CopyReply& final) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !chunks_.empty() || done_; });
    if (chunks_.empty()) {
      final = final_;
      return std::nullopt;
    }
    std::string chunk = std::move(chunks_.front());
    chunks_.pop_front();
    queued_bytes_ -= chunk.size();
    cv_.notify_all();
    return chunk;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool have_head_ = false;          // Guarded by mu_.
  CopyReply head_;                  // Guarded by mu_.
  bool done_ = false;               // Guarded by mu_.
  CopyReply final_;                 // Guarded by mu_.
  bool client_gone_ = false;        // Guarded by mu_.
  std::deque<std::string> chunks_;  // Guarded by mu_.
  size_t queued_bytes_ = 0;         // Guarded by mu_.
  std::thread thread_;              // Started last: the lambda uses the members above.
};

NativeResponse Router::InvokeStream(const NativeRequest& request) {
  auto call = std::make_shared<Call>();
  auto resolved = Prepare(request, *call);
  if (!resolved) return Fail(*call, FromError(resolved.error()));
  const RouteInfo route = *resolved;
  auto strategy = ParseStrategy(route.strategy);
  if (!strategy) return Fail(*call, InternalFailure(strategy.error().message));

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
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    auto lease = balancer_.Acquire(route.component, *strategy, route.copies, tried);
    if (!lease) break;
    tried.insert(lease->copy().id);
    const auto sent = clock_.Now();
    auto upstream = std::make_shared<Upstream>(client_, lease->copy().address, req);
    CopyReply head = upstream->WaitForHead();
    if (!upstream->HasHead()) {
      if (FailedBeforeAnswering(head)) {
        CountAttempt(*call, lease->copy().id, attempt, "unanswered");
        balancer_.Quarantine(lease->copy().id);
        client_.Forget(lease->copy().address);
        unanswered = std::move(head);
        continue;
      }
      CountAttempt(*call, lease->copy().id, attempt, "failed");
      return Fail(*call, ModelErrorFor(route, call->endpoint, head));
    }
    CountAttempt(*call, lease->copy().id, attempt, head.status >= 500 ? "5xx" : "answered");
    if (head.status < 200 || head.status >= 300) {
      return Fail(*call, ModelErrorFor(route, call->endpoint, upstream->WaitDone()));
    }
    NativeResponse out;
    out.content_type = "application/vnd.amazon.eventstream";
    out.headers.emplace_back("x-Amzn-Invoked-Production-Variant", route.variant);
    if (!head.content_type.empty()) {
      out.headers.emplace_back("X-Amzn-SageMaker-Content-Type", head.content_type);
    }
    if (!head.custom_attributes.empty()) {
      out.headers.emplace_back("X-Amzn-SageMaker-Custom-Attributes", head.custom_attributes);
    }
    const bool sse = head.content_type.rfind("text/event-stream", 0) == 0;
    auto held = std::make_shared<CopyBalancer::Lease>(std::move(*lease));
    // Accounts for the call even if the server never runs the stream (client already gone).
    std::shared_ptr<void> finisher(nullptr, [this, call](void*) {
      if (!call->finished) Finish(*call, NativeResponse{});
    });
    out.stream = [this, call, upstream, held, finisher, sse, sent](const StreamWriter& write) {
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
      NativeResponse done;
      if (relay.failed()) done.headers.emplace_back("X-Amzn-ErrorType", "ModelStreamError");
      Finish(*call, std::move(done));
    };
    return out;
  }
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

}  // namespace carve::server::runtime
