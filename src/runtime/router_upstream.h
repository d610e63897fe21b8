// Router::Upstream: the copy's side of one streamed invocation, read on a helper thread
// (cpp-httplib's client blocks for the whole response) while the request's worker waits for the
// copy's status. Internal to the router's streaming paths (router_stream.cc, router_openai.cc).
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "runtime/router.h"

namespace carve::runtime {

namespace router_internal {
constexpr size_t kMaxQueuedBytes = size_t{4} * 1024 * 1024;  // Back-pressure on the copy.
}  // namespace router_internal

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
                cv_.wait(lock, [&] {
                  return queued_bytes_ < router_internal::kMaxQueuedBytes || client_gone_;
                });
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

}  // namespace carve::runtime
