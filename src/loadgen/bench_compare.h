// `carve bench compare A.json B.json`: the per-cell differences of two bench runs (B against the
// baseline A) and, per scenario, the cost crossover concurrency.
//
// Crossover: the lowest concurrency from which B costs less per million output tokens than A at
// every higher concurrency both runs measured (seed 001: "cheaper above a crossover").
// Worked example: A costs 1.0, 0.8, 0.5 and B 1.2, 0.7, 0.4 at 2, 4, 8 -> crossover 4. If B is
// dearer at the top concurrency, there is none; if it is cheaper everywhere, it is the lowest.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loadgen/bench_report.h"

namespace carve::loadgen {

struct CellDiff {
  std::string scenario;
  int concurrency = 0;
  BenchCellResult a;  // copies: a comparison outlives the runs it was made from
  BenchCellResult b;
  // (B - A) / A x 100; nullopt when either value is missing or A's is zero.
  std::optional<double> tok_s_pct, ttft_p50_pct, itl_p50_pct, e2e_p50_pct, cost_pct;
};

struct ScenarioCrossover {
  std::string scenario;
  bool priced = false;  // both runs have costs for some shared concurrency
  std::optional<int> b_cheaper_from;
};

struct BenchComparison {
  std::string a_name, b_name;
  std::vector<CellDiff> cells;                // cells both runs measured, in A's order
  std::vector<ScenarioCrossover> crossovers;  // one per shared scenario
};

BenchComparison CompareRuns(const BenchRun& a, const BenchRun& b);

std::string FormatComparison(const BenchComparison& cmp);

}  // namespace carve::loadgen
