// Calibration: fit the efficiency factors (perf_model.h) to a measured bench result, and the
// bench JSON format that `carve bench` writes and `carve plan calibrate` reads (schema in
// docs/planner.md, "Bench JSON").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/model_spec.h"
#include "planner/perf_model.h"
#include "planner/scenario.h"
#include "planner/serving_sim.h"

namespace carve::planner {

struct BenchCell {
  Scenario scenario;
  int concurrency = 0;
  std::optional<double> output_tok_s;
  std::optional<double> ttft_p50_s;
  std::optional<double> itl_p50_s;
  std::optional<double> e2e_p50_s;
};

struct BenchResult {
  std::string model;      // Catalog id or a custom model's id.
  std::string target;     // "h100-80gb:3g.40gb".
  std::string precision = "bf16";
  std::vector<BenchCell> cells;
};

// InvalidArgument names the field (with its cell index) and what was wrong.
Result<BenchResult> ParseBenchJson(std::string_view text);
std::string WriteBenchJson(const BenchResult& bench);

struct CalibrationResult {
  EfficiencyFactors factors;
  double rms_log_error = 0;  // sqrt(mean of ln(predicted / measured)^2) over every metric used.
  int metrics_used = 0;
};

// Finds the compute and bandwidth factors in [0.01, 1] minimising the squared log error of the
// predicted TTFT p50, ITL p50 and output tok/s against every cell's measured ones (the metrics a
// cell has). A pattern search: deterministic, no gradients (the simulator is piecewise smooth).
// InvalidArgument when no cell has a usable metric.
Result<CalibrationResult> Calibrate(const ModelSpec& model, Precision precision,
                                    const Hardware& hardware, const ServingConfig& serving,
                                    const std::vector<BenchCell>& cells,
                                    const SimOptions& options = {});

// Factors as JSON ({"compute":..,"bandwidth":..,"source":..}) and back; the file perf,
// compare and recommend accept with --factors.
std::string WriteFactorsJson(const EfficiencyFactors& f);
Result<EfficiencyFactors> ParseFactorsJson(std::string_view text);

}  // namespace carve::planner
