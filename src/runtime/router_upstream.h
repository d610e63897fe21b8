// Router::Upstream: the copy's side of one streamed invocation, an HttpClient stream whose
// chunks queue here until the request's worker relays them. The worker waits for the copy's
// status first (the downstream status is chosen before any byte is sent). No thread reads the
// copy: the client's loop does, and stops reading while 4 MiB are queued (back-pressure on the
// copy) until the worker drains below that. Internal to the streaming paths (router_stream.cc,
// router_openai.cc).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/router.h"

namespace carve::runtime {

namespace router_internal {
constexpr size_t kMaxQueuedBytes = size_t{4} * 1024 * 1024;  // Back-pressure on the copy.
}  // namespace router_internal

// The copy's side of one streamed invocation. Destruction tells the client that the caller is
// gone: the copy's request is aborted.
class Router::Upstream {
 public:
  Upstream(http::HttpClient& client, const std::string& address, const CopyRequest& request)
      : feed_(std::make_shared<Feed>()),
        stream_(client.OpenStream(address, ToClientRequest(request), feed_)) {}
  ~Upstream() { stream_->Cancel(); }
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;

  // Blocks until the copy's status arrived or the request ended without one; returns the
  // headers, or the final reply (outcome/detail) when none came.
  CopyReply WaitForHead() {
    std::unique_lock lock(feed_->mu);
    feed_->cv.wait(lock, [&] { return feed_->have_head || feed_->done; });
    return feed_->have_head ? feed_->head : feed_->final;
  }
  bool HasHead() {
    std::lock_guard lock(feed_->mu);
    return feed_->have_head;
  }
  // Waits for the whole (non-2xx) reply.
  CopyReply WaitDone() {
    std::unique_lock lock(feed_->mu);
    feed_->cv.wait(lock, [&] { return feed_->done; });
    return feed_->final;
  }
  // Next chunk, or nullopt at the end (then `final` holds how it ended).
  std::optional<std::string> Next(CopyReply& final) {
    std::string chunk;
    bool resume = false;
    {
      std::unique_lock lock(feed_->mu);
      feed_->cv.wait(lock, [&] { return !feed_->chunks.empty() || feed_->done; });
      if (feed_->chunks.empty()) {
        final = feed_->final;
        return std::nullopt;
      }
      chunk = std::move(feed_->chunks.front());
      feed_->chunks.pop_front();
      feed_->queued_bytes -= chunk.size();
      if (feed_->paused && feed_->queued_bytes < router_internal::kMaxQueuedBytes) {
        feed_->paused = false;
        resume = true;
      }
    }
    if (resume) stream_->Resume();
    return chunk;
  }

 private:
  // What the client's loop hands over, under one lock with the worker.
  struct Feed final : http::StreamSink {
    bool OnHead(const http::ClientReply& reply) override {
      {
        std::lock_guard lock(mu);
        head = ToCopyReply(reply);
        have_head = true;
      }
      cv.notify_all();
      return true;
    }
    Flow OnData(std::string_view data) override {
      Flow flow = Flow::kMore;
      {
        std::lock_guard lock(mu);
        queued_bytes += data.size();
        chunks.emplace_back(data);
        if (queued_bytes >= router_internal::kMaxQueuedBytes) {
          paused = true;
          flow = Flow::kPause;
        }
      }
      cv.notify_all();
      return flow;
    }
    void OnEnd(http::ClientReply reply) override {
      {
        std::lock_guard lock(mu);
        final = ToCopyReply(std::move(reply));
        done = true;
      }
      cv.notify_all();
    }

    std::mutex mu;
    std::condition_variable cv;
    bool have_head = false;          // Guarded by mu.
    CopyReply head;                  // Guarded by mu.
    bool done = false;               // Guarded by mu.
    CopyReply final;                 // Guarded by mu.
    std::deque<std::string> chunks;  // Guarded by mu.
    size_t queued_bytes = 0;         // Guarded by mu.
    bool paused = false;             // The client stopped reading (mu).
  };

  std::shared_ptr<Feed> feed_;
  std::shared_ptr<http::HttpClient::Handle> stream_;
};

}  // namespace carve::runtime
