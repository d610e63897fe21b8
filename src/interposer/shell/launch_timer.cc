#include "interposer/shell/launch_timer.h"

#include "interposer/shell/hook_support.h"

namespace carve::interposer::shell {

void LaunchTimer::Poll() {
  static const auto query = Real<PfnEventQuery>(Fn::k_cuEventQuery);
  static const auto elapsed = Real<PfnEventElapsedTime>(Fn::k_cuEventElapsedTime_v2)
                                  ? Real<PfnEventElapsedTime>(Fn::k_cuEventElapsedTime_v2)
                                  : Real<PfnEventElapsedTime>(Fn::k_cuEventElapsedTime);
  if (query == nullptr || elapsed == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (in_flight_.empty()) return;
  // This thread may be any thread of the program, while another one captures a graph in global
  // mode (torch.cuda.graph's default): event queries must not break that capture.
  RelaxedCaptureMode relaxed;
  // Launches complete roughly in order; stop at the first that has not, to keep polling O(1).
  while (!in_flight_.empty()) {
    InFlight& f = in_flight_.front();
    CuResult q = query(f.pair.end);
    if (q == kCudaErrorNotReady) break;
    float ms = 0;
    if (q == kCudaSuccess && elapsed(&ms, f.pair.start, f.pair.end) == kCudaSuccess) {
      limiter_.Settle(f.estimate_ns, static_cast<int64_t>(static_cast<double>(ms) * 1e6));
    }
    spare_.push_back(f.pair);
    in_flight_.pop_front();
  }
}

void LaunchTimer::SettleOldest() {
  static const auto sync = Real<PfnEventSynchronize>(Fn::k_cuEventSynchronize);
  CuEvent end = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_.empty()) return;
    end = in_flight_.front().pair.end;
  }
  if (sync != nullptr) {
    RelaxedCaptureMode relaxed;
    sync(end);
  }
  Poll();
}

bool LaunchTimer::HasInFlight() {
  std::lock_guard<std::mutex> lock(mu_);
  return !in_flight_.empty();
}

LaunchTimer::Pair LaunchTimer::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_.size() >= kMaxInFlight) return {};
    if (!spare_.empty()) {
      Pair p = spare_.back();
      spare_.pop_back();
      return p;
    }
  }
  static const auto create = Real<PfnEventCreate>(Fn::k_cuEventCreate);
  Pair p;
  if (create == nullptr || create(&p.start, kCuEventDefault) != kCudaSuccess) return {};
  if (create(&p.end, kCuEventDefault) != kCudaSuccess) {
    static const auto destroy = Real<PfnEventDestroy>(Fn::k_cuEventDestroy_v2);
    if (destroy != nullptr) destroy(p.start);
    return {};
  }
  return p;
}

void LaunchTimer::Track(Pair pair, int64_t estimate_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.push_back({pair, estimate_ns});
}

void LaunchTimer::Return(Pair pair) {
  if (pair.start == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  spare_.push_back(pair);
}

}  // namespace carve::interposer::shell
