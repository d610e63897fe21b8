#include "planner/recommend.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "catalog/catalog.h"
#include "core/layout_validator.h"
#include "planner/memory_fit.h"

namespace carve::planner {
namespace {

constexpr std::string_view kSloForms =
    "metric<=value with metric one of ttft_p50, ttft_p90, itl_p50, e2e_p50 (units ms or s), "
    "deadline_miss (a fraction), or tok_s>=value";

Result<double> ParseNumber(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    return InvalidArgument(fmt::format("'{}' is not a number", s));
  }
  return v;
}

Result<SloTerm> ParseSloTerm(std::string_view term) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("SLO term '{}' {}; expected {}", term, why, kSloForms));
  };
  size_t op = term.find_first_of("<>");
  if (op == std::string_view::npos || op + 1 >= term.size() || term[op + 1] != '=') {
    return bad("has no <= or >=");
  }
  std::string_view name = term.substr(0, op);
  std::string_view value = term.substr(op + 2);
  SloTerm t;
  t.at_most = term[op] == '<';
  static constexpr std::pair<std::string_view, SloMetric> kNames[] = {
      {"ttft_p50", SloMetric::kTtftP50}, {"ttft_p90", SloMetric::kTtftP90},
      {"itl_p50", SloMetric::kItlP50},   {"e2e_p50", SloMetric::kE2eP50},
      {"deadline_miss", SloMetric::kDeadlineMiss}, {"tok_s", SloMetric::kTokS}};
  auto it = std::find_if(std::begin(kNames), std::end(kNames),
                         [&](const auto& n) { return n.first == name; });
  if (it == std::end(kNames)) return bad(fmt::format("names an unknown metric '{}'", name));
  t.metric = it->second;
  bool latency = t.metric != SloMetric::kDeadlineMiss && t.metric != SloMetric::kTokS;
  if ((t.metric == SloMetric::kTokS) == t.at_most) {
    return bad(t.metric == SloMetric::kTokS ? "must use >= for tok_s" : "must use <=");
  }
  double scale = 1;
  if (latency) {
    if (value.ends_with("ms")) {
      scale = 1e-3;
      value.remove_suffix(2);
    } else if (value.ends_with("s")) {
      value.remove_suffix(1);
    } else {
      return bad("has a latency without a unit (ms or s)");
    }
  }
  auto v = ParseNumber(value);
  if (!v || *v < 0) return bad("has a value that is not a non-negative number");
  t.value = *v * scale;
  return t;
}

double Measure(const CellResult& c, SloMetric m) {
  switch (m) {
    case SloMetric::kTtftP50: return c.ttft_p50_s;
    case SloMetric::kTtftP90: return c.ttft_p90_s;
    case SloMetric::kItlP50: return c.itl_p50_s;
    case SloMetric::kE2eP50: return c.e2e_p50_s;
    case SloMetric::kDeadlineMiss: return c.deadline_miss_fraction;
    case SloMetric::kTokS: return c.output_tok_s;
  }
  return 0;
}

std::string FormatValue(SloMetric m, double v) {
  if (m == SloMetric::kDeadlineMiss) return fmt::format("{:.3f}", v);
  if (m == SloMetric::kTokS) return fmt::format("{:.0f} tok/s", v);
  return v < 1 ? fmt::format("{:.1f} ms", v * 1e3) : fmt::format("{:.2f} s", v);
}

// Empty when every term holds; otherwise one clause per broken term.
std::string SloViolations(const CellResult& c, const std::vector<SloTerm>& slo) {
  std::string out;
  for (const SloTerm& t : slo) {
    double v = Measure(c, t.metric);
    bool ok = t.at_most ? v <= t.value : v >= t.value;
    if (ok) continue;
    out += fmt::format("{}{} {} {} {}", out.empty() ? "" : "; ", SloMetricName(t.metric),
                       FormatValue(t.metric, v), t.at_most ? ">" : "<",
                       FormatValue(t.metric, t.value));
  }
  if (!out.empty() && c.kv_limited) {
    out += fmt::format(" (kv_capacity holds {} sequences < concurrency {})", c.batch_limit,
                       c.concurrency);
  }
  return out;
}

catalog::DriverVersion RequiredDriver(const Target& t) {
  catalog::DriverVersion need = t.gpu->min_driver;
  if (t.profile != nullptr && t.profile->min_driver > need) need = t.profile->min_driver;
  return need;
}

OptionResult Evaluate(const PlanContext& ctx, const RecommendRequest& req, const Target& t) {
  OptionResult o;
  o.target = t;
  auto hw = HardwareFor(t, ctx.precision);
  if (!hw) {
    o.ruled_out = hw.error().code == ErrorCode::kInvalidArgument ? RuledOut::kPrecision
                                                                 : RuledOut::kCatalog;
    o.reason = hw.error().message;
    return o;
  }
  if (req.driver && t.profile != nullptr && RequiredDriver(t) > *req.driver) {
    o.ruled_out = RuledOut::kDriver;
    o.reason = fmt::format("{} needs driver {} or newer; the fleet runs {}", t.Name(),
                           RequiredDriver(t).ToString(), req.driver->ToString());
    return o;
  }
  FitRequest fit{ctx.precision, req.scenario.input_tokens + req.scenario.output_tokens, 1,
                 ctx.serving.overhead_bytes};
  FitResult f = FitInMemory(ctx.model, fit, hw->memory_bytes);
  if (!f.fits) {
    o.ruled_out = RuledOut::kMemory;
    o.reason = f.weights_fit
                   ? fmt::format("one sequence of {} tokens needs {} of KV; {} is free",
                                 fit.context_tokens,
                                 FormatGb(KvBytesPerToken(ctx.model, ctx.precision.kv) *
                                          fit.context_tokens),
                                 FormatGb(f.memory_bytes - f.weight_bytes - f.overhead_bytes))
                   : fmt::format("weights {} + overhead {} exceed the {} of memory",
                                 FormatGb(f.weight_bytes), FormatGb(f.overhead_bytes),
                                 FormatGb(f.memory_bytes));
    return o;
  }
  PerfModel model =
      PerfModel::Create(ctx.model, ctx.precision, *hw, ctx.factors, ctx.serving).value();
  o.cell = SimulateCell(model, req.scenario, req.concurrency, ctx.sim);
  auto price = PriceTarget(t, ctx.prices, ctx.instance_type);
  if (price) o.price = *price;
  o.usd_per_mtok = CostPerMillionTokens(o.price, o.cell->output_tok_s);
  if (std::string v = SloViolations(*o.cell, req.slo); !v.empty()) {
    o.ruled_out = RuledOut::kSlo;
    o.reason = v;
  } else if (!o.usd_per_mtok) {
    o.ruled_out = RuledOut::kPrice;
    o.reason = "meets the SLO but cannot be ranked: " + o.price.source;
  }
  return o;
}

}  // namespace

std::string_view SloMetricName(SloMetric m) {
  switch (m) {
    case SloMetric::kTtftP50: return "ttft_p50";
    case SloMetric::kTtftP90: return "ttft_p90";
    case SloMetric::kItlP50: return "itl_p50";
    case SloMetric::kE2eP50: return "e2e_p50";
    case SloMetric::kDeadlineMiss: return "deadline_miss";
    case SloMetric::kTokS: return "tok_s";
  }
  return "unknown";
}

std::string_view RuledOutName(RuledOut r) {
  switch (r) {
    case RuledOut::kNone: return "none";
    case RuledOut::kPrecision: return "precision";
    case RuledOut::kCatalog: return "catalog";
    case RuledOut::kDriver: return "driver";
    case RuledOut::kMemory: return "memory";
    case RuledOut::kSlo: return "slo";
    case RuledOut::kPrice: return "price";
  }
  return "unknown";
}

Result<std::vector<SloTerm>> ParseSlo(std::string_view text) {
  std::vector<SloTerm> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = std::min(text.find(',', pos), text.size());
    std::string_view term = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (term.empty()) continue;
    CARVE_ASSIGN_OR_RETURN(SloTerm t, ParseSloTerm(term));
    out.push_back(t);
  }
  return out;
}

Result<std::vector<FleetGpu>> ParseFleet(std::string_view text) {
  std::vector<FleetGpu> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = std::min(text.find(',', pos), text.size());
    std::string_view item = text.substr(pos, comma - pos);
    pos = comma + 1;
    size_t colon = item.rfind(':');
    int count = 0;
    if (colon == std::string_view::npos ||
        std::from_chars(item.data() + colon + 1, item.data() + item.size(), count).ec !=
            std::errc() ||
        count <= 0) {
      return InvalidArgument(fmt::format(
          "fleet item '{}' is not gpu:count with count > 0 (e.g. 'a100-40gb:8')", item));
    }
    CARVE_ASSIGN_OR_RETURN(const catalog::GpuModel* gpu, catalog::FindGpu(item.substr(0, colon)));
    out.push_back(FleetGpu{gpu, count});
  }
  return out;
}

std::optional<LayoutSuggestion> PackCopies(const catalog::GpuModel& gpu,
                                           const catalog::MigProfile& profile, int copies,
                                           int gpu_count,
                                           std::optional<catalog::DriverVersion> driver) {
  LayoutSuggestion s;
  s.gpu = &gpu;
  s.profile = &profile;
  s.copies_wanted = copies;
  core::LayoutOptions options;
  options.driver = driver;
  for (int j = 1; j <= std::max(profile.max_count, 1); ++j) {
    std::vector<const catalog::MigProfile*> wanted(j, &profile);
    auto layout = core::ValidateProfiles(gpu, wanted, options);
    if (!layout) break;
    s.per_gpu = j;
    s.layout = std::move(layout).value();
  }
  if (s.per_gpu == 0) return std::nullopt;
  s.gpus_used = std::min(gpu_count, (copies + s.per_gpu - 1) / s.per_gpu);
  s.copies_placed = std::min(copies, s.per_gpu * gpu_count);
  s.note = s.copies_placed < copies
               ? fmt::format("the fleet's {} x {} hold only {} of the {} copies", gpu_count,
                             gpu.id, s.copies_placed, copies)
               : fmt::format("{} GPU(s) carved as below hold the {} copies", s.gpus_used, copies);
  return s;
}

Result<Recommendation> Recommend(const PlanContext& ctx, const RecommendRequest& req) {
  if (req.copies < 1 || req.concurrency < 1) {
    return InvalidArgument(fmt::format("copies={} and concurrency={} must both be >= 1",
                                       req.copies, req.concurrency));
  }
  std::vector<const catalog::GpuModel*> gpus;
  for (const FleetGpu& f : req.fleet) gpus.push_back(f.gpu);
  Recommendation rec;
  for (const Target& t : EnumerateTargets(gpus)) {
    OptionResult o = Evaluate(ctx, req, t);
    (o.ruled_out == RuledOut::kNone ? rec.ranked : rec.ruled_out).push_back(std::move(o));
  }
  std::stable_sort(rec.ranked.begin(), rec.ranked.end(),
                   [](const OptionResult& a, const OptionResult& b) {
                     return *a.usd_per_mtok < *b.usd_per_mtok;
                   });
  if (!req.fleet.empty() && !rec.ranked.empty()) {
    const OptionResult& best = rec.ranked.front();
    int count = 0;
    for (const FleetGpu& f : req.fleet) {
      if (f.gpu == best.target.gpu) count += f.count;
    }
    if (best.target.profile != nullptr) {
      rec.layout = PackCopies(*best.target.gpu, *best.target.profile, req.copies, count,
                              req.driver);
    } else {
      LayoutSuggestion s;
      s.gpu = best.target.gpu;
      s.copies_wanted = req.copies;
      s.per_gpu = 1;
      s.gpus_used = std::min(count, req.copies);
      s.copies_placed = s.gpus_used;
      s.layout.gpu = best.target.gpu;
      s.note = "whole GPUs, MIG disabled: one copy per GPU";
      rec.layout = s;
    }
  }
  return rec;
}

}  // namespace carve::planner
