#include "loadgen/cell_runner.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace carve::loadgen {

Result<CellMetrics> RunCell(const Target& target, const CellPlan& plan,
                            const CellProgress& progress) {
  if (plan.concurrency < 1) {
    return InvalidArgument(fmt::format("concurrency {} must be >= 1", plan.concurrency));
  }
  if (!plan.requests && !plan.duration) {
    return InvalidArgument("a cell needs a request count or a duration");
  }
  if ((plan.requests && *plan.requests < 1) || (plan.duration && plan.duration->count() <= 0)) {
    return InvalidArgument("a cell's request count and duration must be positive");
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::vector<RequestOutcome> outcomes;  // guarded by mu
  Clock::time_point last_end = start;    // guarded by mu

  auto worker = [&] {
    std::unique_ptr<TargetSession> session = target.NewSession();
    while (true) {
      if (plan.duration && Clock::now() - start >= *plan.duration) return;
      const int64_t index = next.fetch_add(1);
      if (plan.requests && index >= *plan.requests) return;
      std::mt19937_64 rng = RequestRng(plan.seed, plan.cell_index, static_cast<uint64_t>(index));
      BenchRequest request;
      request.shape = SampleShape(plan.scenario, rng);
      request.prompt = PromptOfTokens(request.shape.input_tokens, rng);
      RequestOutcome outcome = session->Send(request, plan.timeout);
      std::lock_guard lock(mu);
      outcomes.push_back(std::move(outcome));
      last_end = std::max(last_end, Clock::now());
      if (progress) {
        progress(static_cast<int64_t>(outcomes.size()),
                 std::chrono::duration<double>(Clock::now() - start).count());
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(plan.concurrency));
  for (int i = 0; i < plan.concurrency; ++i) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  return Summarise(outcomes, std::chrono::duration<double>(last_end - start).count());
}

}  // namespace carve::loadgen
