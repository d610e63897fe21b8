// FakeTarget: a Target for tests that answers from a function, records every request and the
// most requests it ever had in flight at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "loadgen/target.h"

namespace carve::loadgen {

class FakeTarget : public Target {
 public:
  using Answer = std::function<RequestOutcome(const BenchRequest&)>;
  // `hold`: how long each Send takes (real time), so workers overlap.
  FakeTarget(Answer answer, std::chrono::milliseconds hold)
      : answer_(std::move(answer)), hold_(hold) {}

  std::unique_ptr<TargetSession> NewSession() const override {
    sessions_.fetch_add(1);
    return std::make_unique<Session>(this);
  }
  std::string Describe() const override { return "fake"; }

  std::vector<BenchRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  int max_in_flight() const { return max_in_flight_.load(); }
  int sessions() const { return sessions_.load(); }

 private:
  class Session : public TargetSession {
   public:
    explicit Session(const FakeTarget* t) : t_(t) {}
    RequestOutcome Send(const BenchRequest& r, std::chrono::milliseconds) override {
      const int now = t_->in_flight_.fetch_add(1) + 1;
      int seen = t_->max_in_flight_.load();
      while (now > seen && !t_->max_in_flight_.compare_exchange_weak(seen, now)) {
      }
      {
        std::lock_guard lock(t_->mu_);
        t_->requests_.push_back(r);
      }
      std::this_thread::sleep_for(t_->hold_);
      t_->in_flight_.fetch_sub(1);
      return t_->answer_(r);
    }

   private:
    const FakeTarget* t_;
  };

  const Answer answer_;
  const std::chrono::milliseconds hold_;
  mutable std::mutex mu_;
  mutable std::vector<BenchRequest> requests_;  // guarded by mu_
  mutable std::atomic<int> in_flight_{0};
  mutable std::atomic<int> max_in_flight_{0};
  mutable std::atomic<int> sessions_{0};
};

// A successful outcome with the request's output tokens, TTFT 10 ms, 1 ms per further token.
inline RequestOutcome PacedAnswer(const BenchRequest& r) {
  RequestOutcome o;
  o.input_tokens = r.shape.input_tokens;
  o.output_tokens = r.shape.output_tokens;
  o.ttft_s = 0.010;
  o.e2e_s = 0.010 + 0.001 * static_cast<double>(r.shape.output_tokens - 1);
  return o;
}

}  // namespace carve::loadgen
