#include "planner/plan_context.h"

#include <fmt/format.h>

namespace carve::planner {

Result<PerfModel> ModelFor(const PlanContext& ctx, const Target& t) {
  CARVE_ASSIGN_OR_RETURN(Hardware hw, HardwareFor(t, ctx.precision));
  return PerfModel::Create(ctx.model, ctx.precision, hw, ctx.factors, ctx.serving);
}

std::vector<PricedCell> PredictCells(const PerfModel& model, const TargetPrice& price,
                                     const Scenario& scenario,
                                     const std::vector<int>& concurrencies,
                                     const SimOptions& sim) {
  std::vector<PricedCell> out;
  for (int c : concurrencies) {
    PricedCell pc;
    pc.cell = SimulateCell(model, scenario, c, sim);
    pc.usd_per_mtok = CostPerMillionTokens(price, pc.cell.output_tok_s);
    out.push_back(pc);
  }
  return out;
}

std::string ModelDisclaimer(const PlanContext& ctx) {
  return fmt::format(
      "predictions from carve's roofline model, not measurements: efficiency factors "
      "compute={:.2f} bandwidth={:.2f} ({}); kernels, CPU overhead and scheduler effects are "
      "not modelled (docs/planner.md); calibrate with `carve plan calibrate`",
      ctx.factors.compute, ctx.factors.bandwidth, ctx.factors.source);
}

}  // namespace carve::planner
