#include "planner/calibrate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace carve::planner {
namespace {

using nlohmann::json;

std::optional<double> Optional(const json& cell, const char* key, double scale) {
  if (!cell.contains(key) || cell[key].is_null()) return std::nullopt;
  return cell[key].get<double>() * scale;
}

double Sq(double x) { return x * x; }

struct Objective {
  const ModelSpec& model;
  Precision precision;
  const Hardware& hardware;
  const ServingConfig& serving;
  const std::vector<BenchCell>& cells;
  const SimOptions& options;
  int metrics = 0;

  double operator()(double compute, double bandwidth) {
    PerfModel m =
        PerfModel::Create(model, precision, hardware, {compute, bandwidth, ""}, serving).value();
    double sum = 0;
    metrics = 0;
    auto add = [&](std::optional<double> measured, double predicted) {
      if (!measured || *measured <= 0) return;
      sum += Sq(std::log(std::max(predicted, 1e-12) / *measured));
      ++metrics;
    };
    for (const BenchCell& c : cells) {
      CellResult r = SimulateCell(m, c.scenario, c.concurrency, options);
      add(c.ttft_p50_s, r.ttft_p50_s);
      add(c.itl_p50_s, r.itl_p50_s);
      add(c.output_tok_s, r.output_tok_s);
    }
    return metrics > 0 ? sum / metrics : 0;
  }
};

}  // namespace

Result<BenchResult> ParseBenchJson(std::string_view text) {
  BenchResult b;
  try {
    json doc = json::parse(text);
    if (!doc.is_object()) return InvalidArgument("bench JSON must be an object");
    for (const char* key : {"model", "target", "cells"}) {
      if (!doc.contains(key)) {
        return InvalidArgument(fmt::format("bench JSON lacks the required field '{}'", key));
      }
    }
    b.model = doc["model"].get<std::string>();
    b.target = doc["target"].get<std::string>();
    if (doc.contains("precision")) b.precision = doc["precision"].get<std::string>();
    if (!doc["cells"].is_array()) return InvalidArgument("bench JSON 'cells' must be an array");
    int i = 0;
    for (const json& cell : doc["cells"]) {
      BenchCell c;
      if (!cell.contains("scenario") || !cell.contains("concurrency")) {
        return InvalidArgument(
            fmt::format("bench JSON cells[{}] lacks 'scenario' or 'concurrency'", i));
      }
      auto sc = ParseScenario(cell["scenario"].get<std::string>());
      if (!sc) {
        return InvalidArgument(fmt::format("bench JSON cells[{}]: {}", i, sc.error().message));
      }
      c.scenario = *sc;
      c.concurrency = cell["concurrency"].get<int>();
      if (c.concurrency <= 0) {
        return InvalidArgument(fmt::format("bench JSON cells[{}]: concurrency={} must be > 0",
                                           i, c.concurrency));
      }
      c.output_tok_s = Optional(cell, "output_tok_s", 1);
      c.ttft_p50_s = Optional(cell, "ttft_p50_ms", 1e-3);
      c.itl_p50_s = Optional(cell, "itl_p50_ms", 1e-3);
      c.e2e_p50_s = Optional(cell, "e2e_p50_ms", 1e-3);
      b.cells.push_back(std::move(c));
      ++i;
    }
  } catch (const json::exception& e) {
    return InvalidArgument(fmt::format("bench JSON does not parse: {}", e.what()));
  }
  return b;
}

std::string WriteBenchJson(const BenchResult& b) {
  json cells = json::array();
  for (const BenchCell& c : b.cells) {
    json cell{{"scenario", c.scenario.text}, {"concurrency", c.concurrency}};
    if (c.output_tok_s) cell["output_tok_s"] = *c.output_tok_s;
    if (c.ttft_p50_s) cell["ttft_p50_ms"] = *c.ttft_p50_s * 1e3;
    if (c.itl_p50_s) cell["itl_p50_ms"] = *c.itl_p50_s * 1e3;
    if (c.e2e_p50_s) cell["e2e_p50_ms"] = *c.e2e_p50_s * 1e3;
    cells.push_back(std::move(cell));
  }
  json doc{{"schema", "carve.bench.v1"}, {"model", b.model},   {"target", b.target},
           {"precision", b.precision},   {"cells", cells}};
  return doc.dump(2);
}

Result<CalibrationResult> Calibrate(const ModelSpec& model, Precision precision,
                                    const Hardware& hardware, const ServingConfig& serving,
                                    const std::vector<BenchCell>& cells,
                                    const SimOptions& options) {
  Objective f{model, precision, hardware, serving, cells, options};
  // Validate once at the defaults: the model must fit the target.
  CARVE_RETURN_IF_ERROR(PerfModel::Create(model, precision, hardware, {}, serving));
  EfficiencyFactors start;
  double x = start.compute, y = start.bandwidth;
  double best = f(x, y);
  if (f.metrics == 0) {
    return InvalidArgument(
        "no bench cell has a positive ttft_p50_ms, itl_p50_ms or output_tok_s to fit against");
  }
  auto clamp = [](double v) { return std::clamp(v, 0.01, 1.0); };
  double step = 0.2;
  for (int iter = 0; iter < 400 && step > 1e-5; ++iter) {
    double bx = x, by = y, bv = best;
    for (auto [dx, dy] : {std::pair{step, 0.0}, {-step, 0.0}, {0.0, step}, {0.0, -step},
                          {step, step}, {-step, -step}, {step, -step}, {-step, step}}) {
      double nx = clamp(x + dx), ny = clamp(y + dy);
      double v = f(nx, ny);
      if (v < bv) {
        bx = nx;
        by = ny;
        bv = v;
      }
    }
    if (bv < best) {
      x = bx;
      y = by;
      best = bv;
    } else {
      step /= 2;
    }
  }
  best = f(x, y);
  CalibrationResult r;
  r.factors = EfficiencyFactors{x, y, ""};
  r.rms_log_error = std::sqrt(best);
  r.metrics_used = f.metrics;
  r.factors.source = fmt::format("calibrated on {} bench cells ({} metrics), rms log error {:.3f}",
                                 cells.size(), f.metrics, r.rms_log_error);
  return r;
}

std::string WriteFactorsJson(const EfficiencyFactors& f) {
  return json{{"compute", f.compute}, {"bandwidth", f.bandwidth}, {"source", f.source}}.dump(2);
}

Result<EfficiencyFactors> ParseFactorsJson(std::string_view text) {
  EfficiencyFactors f;
  try {
    json doc = json::parse(text);
    f.compute = doc.at("compute").get<double>();
    f.bandwidth = doc.at("bandwidth").get<double>();
    f.source = doc.value("source", std::string("factors file"));
  } catch (const json::exception& e) {
    return InvalidArgument(fmt::format(
        "factors JSON must hold numbers 'compute' and 'bandwidth': {}", e.what()));
  }
  CARVE_RETURN_IF_ERROR(ValidateFactors(f));
  return f;
}

}  // namespace carve::planner
