// A bench run as data, and its outputs: bench.json (schema carve.bench.v1, readable by
// `carve plan calibrate`), bench.csv, the terminal table and one SVG per scenario.
//
// bench.json stays carve.bench.v1: that schema (docs/planner.md "Bench JSON") requires only
// model, target and cells[].scenario / concurrency and lets readers ignore other fields, so the
// extra metrics and the pricing below are additions a v1 reader skips, not a new version.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "loadgen/bench_cost.h"
#include "loadgen/cell_metrics.h"

namespace carve::loadgen {

struct BenchCellResult {
  std::string scenario;  // normalised text, "D(100,100)"
  int concurrency = 0;
  CellMetrics metrics;
  std::optional<double> usd_per_million_tokens;
};

struct BenchRun {
  std::string name;        // legend label: --target-name, else the target, else the endpoint
  std::string model;       // --model, else "unknown"
  std::string target;      // planner spelling ("h100-80gb:3g.40gb"), else the name
  std::string precision = "bf16";
  std::string endpoint;    // Target::Describe()
  uint64_t seed = 0;
  // Pricing as used for the cells' costs; known = false leaves costs empty.
  bool priced = false;
  double usd_per_hour = 0;
  double gpu_share = 0;
  double instance_share = 0;
  std::string instance_type;
  std::string price_source;
  std::vector<BenchCellResult> cells;
};

std::string WriteBenchRunJson(const BenchRun& run);
// Reads what WriteBenchRunJson writes; also a plain carve.bench.v1 file (missing metrics are
// empty). InvalidArgument names the field and cell index.
Result<BenchRun> ParseBenchRunJson(std::string_view text);

// One header row, then a row per cell; times in milliseconds, empty fields for unknown values.
std::string WriteBenchCsv(const BenchRun& run);

// The terminal table: one row per cell.
std::string FormatBenchTable(const BenchRun& run);

// Scenarios in first-seen order across the runs.
std::vector<std::string> ScenariosOf(const std::vector<BenchRun>& runs);
// One SVG for `scenario`: output tok/s against concurrency, one line per run; beside it, when
// any run is priced, $ per million output tokens against concurrency (seed 001's figures 1, 2).
std::string ScenarioSvg(const std::vector<BenchRun>& runs, const std::string& scenario);
// "D(100,100)" -> "D_100_100" (a file name).
std::string ScenarioFileStem(std::string_view scenario);

// Writes bench.json, bench.csv and <stem>.svg per scenario into `dir` (created if missing).
// Unavailable naming the path when a file cannot be written.
Status WriteBenchOutputs(const BenchRun& run, const std::string& dir);
// Only the SVGs (for `carve bench compare --out`).
Status WriteScenarioSvgs(const std::vector<BenchRun>& runs, const std::string& dir);

}  // namespace carve::loadgen
