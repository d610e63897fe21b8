#include "loadgen/bench_runner.h"

#include <fmt/format.h>

#include "loadgen/cell_runner.h"

namespace carve::loadgen {

Result<BenchRun> RunBench(const Target& target, const BenchOptions& options,
                          const BenchPrice& price, BenchRun run, ProgressBar* progress) {
  const std::vector<LoadScenario> scenarios =
      options.scenarios.empty() ? DefaultScenarios() : options.scenarios;
  const std::vector<int> ladder =
      options.concurrency.empty() ? DefaultConcurrency() : options.concurrency;
  run.seed = options.seed;
  run.priced = price.price.known;
  run.usd_per_hour = price.price.usd_per_hour;
  run.gpu_share = price.price.gpu_share;
  run.instance_share = price.instance_share;
  run.instance_type = price.price.instance_type;
  run.price_source = price.price.source;
  // Validate every cell's plan before sending anything.
  for (int c : ladder) {
    if (c < 1) return InvalidArgument(fmt::format("concurrency {} must be >= 1", c));
  }
  uint64_t cell_index = 0;
  for (const LoadScenario& scenario : scenarios) {
    for (int concurrency : ladder) {
      CellPlan plan{scenario, concurrency, options.requests, options.duration, options.timeout,
                    options.seed, cell_index++};
      std::optional<double> duration_s;
      if (options.duration) duration_s = std::chrono::duration<double>(*options.duration).count();
      const std::string label = fmt::format("{} c={}", scenario.shape.text, concurrency);
      if (progress) progress->StartCell(label, options.requests, duration_s);
      CellProgress update;
      if (progress) update = [progress](int64_t n, double s) { progress->Update(n, s); };
      CARVE_ASSIGN_OR_RETURN(CellMetrics m, RunCell(target, plan, update));
      BenchCellResult cell{scenario.shape.text, concurrency, m,
                           CostPerMillionOutputTokens(price, m.output_tok_s)};
      if (progress) {
        progress->EndCell(fmt::format("{:.1f} tok/s, {} errors, {} deadline failures",
                                      m.output_tok_s, m.errors, m.deadline_failures));
      }
      run.cells.push_back(std::move(cell));
    }
  }
  return run;
}

}  // namespace carve::loadgen
