// A whole bench: every scenario at every concurrency of the ladder, one cell after another,
// priced, as a BenchRun ready for the report writers.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/result.h"
#include "loadgen/bench_cost.h"
#include "loadgen/bench_report.h"
#include "loadgen/load_scenario.h"
#include "loadgen/progress.h"
#include "loadgen/target.h"

namespace carve::loadgen {

struct BenchOptions {
  std::vector<LoadScenario> scenarios;  // empty: DefaultScenarios()
  std::vector<int> concurrency;         // empty: DefaultConcurrency()
  std::optional<int64_t> requests;      // per cell; see CellPlan
  std::optional<std::chrono::milliseconds> duration;  // per cell
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // per request
  uint64_t seed = 0;
};

// Fills `run.cells` (and the pricing fields from `price`); the identity fields of `run` (name,
// model, target, endpoint) are the caller's. Errors: RunCell's InvalidArgument for bad stop
// conditions or concurrency, before any request is sent.
Result<BenchRun> RunBench(const Target& target, const BenchOptions& options,
                          const BenchPrice& price, BenchRun run, ProgressBar* progress);

}  // namespace carve::loadgen
