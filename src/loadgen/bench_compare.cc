#include "loadgen/bench_compare.h"

#include <fmt/format.h>

#include <algorithm>

namespace carve::loadgen {
namespace {

std::optional<double> Pct(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *a == 0) return std::nullopt;
  return (*b - *a) / *a * 100;
}

std::string PctText(const std::optional<double>& v) {
  return v ? fmt::format("{:+.1f}%", *v) : std::string("-");
}

}  // namespace

BenchComparison CompareRuns(const BenchRun& a, const BenchRun& b) {
  BenchComparison cmp;
  cmp.a_name = a.name;
  cmp.b_name = b.name;
  for (const BenchCellResult& ca : a.cells) {
    auto it = std::find_if(b.cells.begin(), b.cells.end(), [&](const BenchCellResult& cb) {
      return cb.scenario == ca.scenario && cb.concurrency == ca.concurrency;
    });
    if (it == b.cells.end()) continue;
    const BenchCellResult& cb = *it;
    CellDiff d;
    d.scenario = ca.scenario;
    d.concurrency = ca.concurrency;
    d.a = ca;
    d.b = cb;
    d.tok_s_pct = Pct(ca.metrics.output_tok_s, cb.metrics.output_tok_s);
    d.ttft_p50_pct = Pct(ca.metrics.ttft_p50_s, cb.metrics.ttft_p50_s);
    d.itl_p50_pct = Pct(ca.metrics.itl_p50_s, cb.metrics.itl_p50_s);
    d.e2e_p50_pct = Pct(ca.metrics.e2e_p50_s, cb.metrics.e2e_p50_s);
    d.cost_pct = Pct(ca.usd_per_million_tokens, cb.usd_per_million_tokens);
    cmp.cells.push_back(d);
  }
  for (const std::string& scenario : ScenariosOf({a})) {
    std::vector<const CellDiff*> priced;
    for (const CellDiff& d : cmp.cells) {
      if (d.scenario == scenario && d.a.usd_per_million_tokens && d.b.usd_per_million_tokens) {
        priced.push_back(&d);
      }
    }
    bool shared = std::any_of(cmp.cells.begin(), cmp.cells.end(),
                              [&](const CellDiff& d) { return d.scenario == scenario; });
    if (!shared) continue;
    ScenarioCrossover x{scenario, !priced.empty(), std::nullopt};
    std::sort(priced.begin(), priced.end(),
              [](const CellDiff* l, const CellDiff* r) { return l->concurrency < r->concurrency; });
    for (auto it = priced.rbegin(); it != priced.rend(); ++it) {
      if (*(*it)->b.usd_per_million_tokens >= *(*it)->a.usd_per_million_tokens) break;
      x.b_cheaper_from = (*it)->concurrency;
    }
    cmp.crossovers.push_back(x);
  }
  return cmp;
}

std::string FormatComparison(const BenchComparison& cmp) {
  std::string out =
      fmt::format("A = {}\nB = {}\ndifferences are (B - A) / A\n", cmp.a_name, cmp.b_name);
  out += fmt::format(
      "{:<22} {:>5} {:>10} {:>10} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} "
      "{:>8}\n",
      "scenario", "conc", "A tok/s", "B tok/s", "tok/s", "A ttft", "B ttft", "ttft", "itl", "e2e",
      "A $/Mtok", "B $/Mtok", "cost");
  auto cost = [](const BenchCellResult& c) {
    return c.usd_per_million_tokens ? fmt::format("{:.4f}", *c.usd_per_million_tokens)
                                    : std::string("-");
  };
  auto ms = [](const std::optional<double>& s) {
    return s ? fmt::format("{:.1f}", *s * 1e3) : std::string("-");
  };
  for (const CellDiff& d : cmp.cells) {
    out += fmt::format(
        "{:<22} {:>5} {:>10.1f} {:>10.1f} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8}\n",
        d.scenario, d.concurrency, d.a.metrics.output_tok_s, d.b.metrics.output_tok_s,
        PctText(d.tok_s_pct), ms(d.a.metrics.ttft_p50_s), ms(d.b.metrics.ttft_p50_s),
        PctText(d.ttft_p50_pct), PctText(d.itl_p50_pct), PctText(d.e2e_p50_pct), cost(d.a),
        cost(d.b), PctText(d.cost_pct));
  }
  if (cmp.cells.empty()) out += "(the runs share no scenario and concurrency)\n";
  for (const ScenarioCrossover& x : cmp.crossovers) {
    if (!x.priced) {
      out += fmt::format("{}: cost crossover: unknown (a run is unpriced)\n", x.scenario);
    } else if (x.b_cheaper_from) {
      out += fmt::format("{}: cost crossover: B is cheaper from concurrency {}\n", x.scenario,
                         *x.b_cheaper_from);
    } else {
      out += fmt::format("{}: cost crossover: none (B is not cheaper at the top of the ladder)\n",
                         x.scenario);
    }
  }
  return out;
}

}  // namespace carve::loadgen
