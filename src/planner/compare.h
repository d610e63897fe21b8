// Comparing targets on the same model and traffic: seed 001's study (one H100 3g.40gb against a
// whole A100-40GB), predicted, for any targets, scenarios and concurrency ladder.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/plan_context.h"

namespace carve::planner {

struct CompareRow {
  int concurrency = 0;
  std::vector<PricedCell> cells;       // One per target, in target order.
  // Against the first target (the baseline); index 0 holds 1 / 0.
  std::vector<double> tok_s_ratio;     // tok/s of target i / baseline's.
  std::vector<double> itl_diff_pct;    // (itl_i - itl_0) / itl_0 x 100; negative = lower.
  std::vector<double> ttft_diff_pct;
  std::vector<std::string> drivers;    // Which factor drives target i's tok/s and ITL difference.
  std::vector<std::string> ttft_drivers;  // ... and its TTFT difference.
  std::optional<size_t> cheapest;      // Target with the lowest $/Mtok, when any is priced.
};

struct Crossover {
  size_t target = 0;
  // Lowest ladder concurrency from which this target is the cheapest through the top of the
  // ladder; nullopt when it is not cheapest at the top.
  std::optional<int> cheaper_from;
  std::vector<int> cheapest_at;        // Every ladder concurrency where it is cheapest.
};

struct ScenarioComparison {
  Scenario scenario;
  std::vector<CompareRow> rows;
  std::vector<Crossover> crossovers;   // One per target.
};

struct Comparison {
  std::vector<Target> targets;
  std::vector<Hardware> hardware;
  std::vector<TargetPrice> prices;
  std::vector<ScenarioComparison> scenarios;
};

// Errors: a target the model cannot be planned on (FP8 on Ampere, weights too large, missing
// catalog figures) fails the whole comparison, naming the target; an unpriced target is a value
// (cost columns empty).
Result<Comparison> Compare(const PlanContext& ctx, const std::vector<Target>& targets,
                           const std::vector<Scenario>& scenarios,
                           const std::vector<int>& concurrencies);

// The factor behind a TTFT difference: queueing for a KV-limited batch, else the resource that
// binds a lone prefill of the scenario's prompt on target b.
std::string TtftDriver(const PerfModel& a, const CellResult& ca, const PerfModel& b,
                       const CellResult& cb, int64_t prompt_tokens);

// Names the factor behind target b's difference from a in one cell, with the hardware ratio:
// "bandwidth (x1.08 attainable GB/s)", "compute (x1.44 prefill FLOP/s)", "kv_capacity (batch
// 40 vs 160)".
std::string DifferenceDriver(const Hardware& a, const CellResult& ca, const Hardware& b,
                             const CellResult& cb);

}  // namespace carve::planner
