// PlanContext: everything a prediction depends on besides the target and the traffic (model,
// precision, efficiency factors, engine knobs, prices), and the one function that turns a
// context and a target into a PerfModel. perf, compare and recommend all go through it, so they
// cannot disagree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "planner/cost.h"
#include "planner/model_spec.h"
#include "planner/perf_model.h"
#include "planner/scenario.h"
#include "planner/serving_sim.h"
#include "planner/target.h"

namespace carve::planner {

struct PlanContext {
  ModelSpec model;
  Precision precision;
  EfficiencyFactors factors;
  ServingConfig serving;
  SimOptions sim;
  catalog::PriceOverrides prices;
  std::string instance_type;  // Preferred instance types, comma-separated (cost.h PriceTarget).
};

// Errors: those of HardwareFor (FP8 on a GPU without it, missing catalog figures) and of
// PerfModel::Create (weights do not fit).
Result<PerfModel> ModelFor(const PlanContext& ctx, const Target& t);

struct PricedCell {
  CellResult cell;
  std::optional<double> usd_per_mtok;  // nullopt when the price is unknown or nothing is served.
};

// One row per concurrency, for one scenario, on one target.
std::vector<PricedCell> PredictCells(const PerfModel& model, const TargetPrice& price,
                                     const Scenario& scenario,
                                     const std::vector<int>& concurrencies, const SimOptions& sim);

// One line a person can read: "carve plan: predictions from a roofline model, not measurements;
// efficiency factors compute=0.50 bandwidth=0.65 (defaults (uncalibrated)) ...".
std::string ModelDisclaimer(const PlanContext& ctx);

}  // namespace carve::planner
