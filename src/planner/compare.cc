#include "planner/compare.h"

#include <fmt/format.h>

namespace carve::planner {
namespace {

double Pct(double value, double base) { return base > 0 ? (value - base) / base * 100 : 0; }

std::vector<Crossover> Crossovers(const std::vector<CompareRow>& rows, size_t targets) {
  std::vector<Crossover> out(targets);
  for (size_t t = 0; t < targets; ++t) {
    out[t].target = t;
    for (const CompareRow& row : rows) {
      if (row.cheapest == t) out[t].cheapest_at.push_back(row.concurrency);
    }
    // Walk down from the top of the ladder while this target stays the cheapest.
    for (auto it = rows.rbegin(); it != rows.rend() && it->cheapest == t; ++it) {
      out[t].cheaper_from = it->concurrency;
    }
  }
  return out;
}

}  // namespace

std::string DifferenceDriver(const Hardware& a, const CellResult& ca, const Hardware& b,
                             const CellResult& cb) {
  if (ca.kv_limited || cb.kv_limited) {
    return fmt::format("kv_capacity (batch limit {} vs {})", ca.batch_limit, cb.batch_limit);
  }
  if (ca.binding == cb.binding) {
    if (ca.binding == Resource::kCompute) {
      return fmt::format("compute (x{:.2f} FLOP/s)", b.peak_flops / a.peak_flops);
    }
    return fmt::format("bandwidth (x{:.2f} GB/s)", b.bandwidth_bytes_s / a.bandwidth_bytes_s);
  }
  return fmt::format("mixed ({}-bound vs {}-bound; x{:.2f} FLOP/s, x{:.2f} GB/s)",
                     ResourceName(ca.binding), ResourceName(cb.binding),
                     b.peak_flops / a.peak_flops, b.bandwidth_bytes_s / a.bandwidth_bytes_s);
}

std::string TtftDriver(const PerfModel& a, const CellResult& ca, const PerfModel& b,
                       const CellResult& cb, int64_t prompt_tokens) {
  if (ca.kv_limited || cb.kv_limited) {
    return fmt::format("queueing for kv_capacity (batch limit {} vs {})", ca.batch_limit,
                       cb.batch_limit);
  }
  StepTime sb = b.Prefill(prompt_tokens);
  if (sb.binding == Resource::kCompute) {
    return fmt::format("compute (prefill x{:.2f} FLOP/s)",
                       b.hardware().peak_flops / a.hardware().peak_flops);
  }
  return fmt::format("bandwidth (short prefill reads the weights: x{:.2f} GB/s)",
                     b.hardware().bandwidth_bytes_s / a.hardware().bandwidth_bytes_s);
}

Result<Comparison> Compare(const PlanContext& ctx, const std::vector<Target>& targets,
                           const std::vector<Scenario>& scenarios,
                           const std::vector<int>& concurrencies) {
  Comparison cmp;
  cmp.targets = targets;
  std::vector<PerfModel> models;
  for (const Target& t : targets) {
    auto m = ModelFor(ctx, t);
    if (!m) return Error{m.error().code, fmt::format("{}: {}", t.Name(), m.error().message)};
    CARVE_ASSIGN_OR_RETURN(TargetPrice price, PriceTarget(t, ctx.prices, ctx.instance_type));
    cmp.hardware.push_back(m->hardware());
    cmp.prices.push_back(price);
    models.push_back(std::move(m).value());
  }
  for (const Scenario& sc : scenarios) {
    ScenarioComparison s;
    s.scenario = sc;
    std::vector<std::vector<PricedCell>> per_target;
    for (size_t i = 0; i < targets.size(); ++i) {
      per_target.push_back(PredictCells(models[i], cmp.prices[i], sc, concurrencies, ctx.sim));
    }
    for (size_t r = 0; r < concurrencies.size(); ++r) {
      CompareRow row;
      row.concurrency = concurrencies[r];
      const CellResult& base = per_target[0][r].cell;
      for (size_t i = 0; i < targets.size(); ++i) {
        const PricedCell& pc = per_target[i][r];
        row.cells.push_back(pc);
        row.tok_s_ratio.push_back(base.output_tok_s > 0 ? pc.cell.output_tok_s / base.output_tok_s
                                                        : 0);
        row.itl_diff_pct.push_back(Pct(pc.cell.itl_p50_s, base.itl_p50_s));
        row.ttft_diff_pct.push_back(Pct(pc.cell.ttft_p50_s, base.ttft_p50_s));
        row.drivers.push_back(i == 0 ? "baseline"
                                     : DifferenceDriver(cmp.hardware[0], base, cmp.hardware[i],
                                                        pc.cell));
        row.ttft_drivers.push_back(
            i == 0 ? "baseline"
                   : TtftDriver(models[0], base, models[i], pc.cell, sc.input_tokens));
        if (pc.usd_per_mtok &&
            (!row.cheapest || *pc.usd_per_mtok < *row.cells[*row.cheapest].usd_per_mtok)) {
          row.cheapest = i;
        }
      }
      s.rows.push_back(std::move(row));
    }
    s.crossovers = Crossovers(s.rows, targets.size());
    cmp.scenarios.push_back(std::move(s));
  }
  return cmp;
}

}  // namespace carve::planner
