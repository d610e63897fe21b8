// `carve plan models|fit|perf|compare|calibrate|recommend`: right-size a partition for a model
// and its traffic. Flags are parsed here; every answer comes from src/planner. Every prediction
// prints the model's disclaimer and the efficiency factors it used.
// Exit codes follow cli/commands.h: 0 answered, 1 a rejection (fit: does not fit; recommend:
// nothing meets the SLO), 2 an input error.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/price_overrides.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "planner/calibrate.h"
#include "planner/compare.h"
#include "planner/memory_fit.h"
#include "planner/model_catalog.h"
#include "planner/model_yaml.h"
#include "planner/plan_context.h"
#include "planner/recommend.h"
#include "planner/report_json.h"
#include "planner/svg_plot.h"

namespace carve::cli {
namespace {

using namespace carve::planner;  // NOLINT: this file is the planner's front end.
using Json = nlohmann::json;

// Flags shared by the subcommands that predict.
struct PlanFlags {
  std::string model, model_file;
  ModelSpec fields;  // Field overrides; 0 / empty = not given.
  std::string dtype = "bf16", kv_dtype, precision;
  double overhead_gb = 1.5;
  double compute_eff = 0, bandwidth_eff = 0;
  std::string factors_file;
  int max_num_seqs = 256;
  int64_t max_batched_tokens = 8192;
  double deadline_s = kDefaultDeadlineSeconds;
  std::vector<std::string> prices;
  std::string prices_file, instance_type;
};

void AddModelFlags(CLI::App* c, PlanFlags& f) {
  c->add_option("--model", f.model, "Catalog model (carve plan models) or a custom model's id");
  c->add_option("--model-file", f.model_file, "YAML description of a custom model");
  c->add_option("--params", f.fields.params, "Override: total parameters");
  c->add_option("--layers", f.fields.layers, "Override: transformer layers");
  c->add_option("--hidden", f.fields.hidden, "Override: hidden size");
  c->add_option("--heads", f.fields.heads, "Override: attention heads");
  c->add_option("--kv-heads", f.fields.kv_heads, "Override: key/value heads");
  c->add_option("--head-dim", f.fields.head_dim, "Override: head dimension");
  c->add_option("--ffn", f.fields.ffn, "Override: FFN intermediate size");
  c->add_option("--vocab", f.fields.vocab, "Override: vocabulary size");
  c->add_option("--max-context", f.fields.default_context, "Override: model's maximum context");
  c->add_option("--dtype", f.dtype, "Weight precision: bf16|fp16|fp8");
  c->add_option("--kv-dtype", f.kv_dtype, "KV-cache precision (default: --dtype)");
  c->add_option("--precision", f.precision, "Both at once: bf16, fp8 or 'w=fp8,kv=bf16'");
  c->add_option("--overhead-gb", f.overhead_gb, "Runtime overhead in GB (default 1.5)");
}

void AddPerfFlags(CLI::App* c, PlanFlags& f) {
  AddModelFlags(c, f);
  c->add_option("--compute-eff", f.compute_eff, "Compute efficiency factor (default 0.50)");
  c->add_option("--bandwidth-eff", f.bandwidth_eff, "Bandwidth efficiency factor (default 0.65)");
  c->add_option("--factors", f.factors_file, "Factors JSON written by `carve plan calibrate`");
  c->add_option("--max-num-seqs", f.max_num_seqs, "Engine's sequence cap (default 256)");
  c->add_option("--max-batched-tokens", f.max_batched_tokens, "Tokens per step (default 8192)");
  c->add_option("--deadline-s", f.deadline_s, "End-to-end deadline in seconds (default 60)");
  c->add_option("--price", f.prices, "Instance price override TYPE=USD_PER_HOUR (repeatable)");
  c->add_option("--prices", f.prices_file, "YAML file with a prices: map");
  c->add_option("--instance-type", f.instance_type, "Price from these instance types (first carrying the GPU)");
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(fmt::format("file '{}' cannot be read", path));
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

Result<ModelSpec> ResolveModel(const PlanFlags& f) {
  ModelSpec m;
  if (!f.model_file.empty()) {
    CARVE_ASSIGN_OR_RETURN(m, LoadModelFile(f.model_file));
  } else if (f.model.empty()) {
    return InvalidArgument("name a model with --model (see `carve plan models`) or --model-file");
  } else if (auto found = FindModel(f.model); found) {
    m = std::move(found).value();
  } else if (f.fields.layers == 0) {
    return found.error();
  } else {
    m.id = f.model;
    m.source = "command line";
  }
  const ModelSpec& o = f.fields;
  bool arch = o.layers || o.hidden || o.heads || o.kv_heads || o.head_dim || o.ffn || o.vocab;
  if (arch && !o.params && m.source != "command line") m.params = 0;  // Re-estimate.
  if (o.params) m.params = o.params;
  if (o.layers) m.layers = o.layers;
  if (o.hidden) m.hidden = o.hidden;
  if (o.heads) m.heads = o.heads;
  if (o.kv_heads) m.kv_heads = o.kv_heads;
  if (o.head_dim) m.head_dim = o.head_dim;
  if (o.ffn) m.ffn = o.ffn;
  if (o.vocab) m.vocab = o.vocab;
  if (o.default_context) m.default_context = o.default_context;
  if (m.source == "command line" && m.default_context == 0) m.default_context = 131072;
  return CompleteModel(std::move(m));
}

Result<PlanContext> ResolveContext(const PlanFlags& f) {
  PlanContext ctx;
  CARVE_ASSIGN_OR_RETURN(ctx.model, ResolveModel(f));
  if (!f.precision.empty()) {
    CARVE_ASSIGN_OR_RETURN(ctx.precision, ParsePrecision(f.precision));
  } else {
    CARVE_ASSIGN_OR_RETURN(ctx.precision.weights, ParseDtype(f.dtype));
    ctx.precision.kv = ctx.precision.weights;
    if (!f.kv_dtype.empty()) {
      CARVE_ASSIGN_OR_RETURN(ctx.precision.kv, ParseDtype(f.kv_dtype));
    }
  }
  if (f.overhead_gb < 0) {
    return InvalidArgument(fmt::format("--overhead-gb={} must be >= 0", f.overhead_gb));
  }
  ctx.serving.overhead_bytes = static_cast<int64_t>(f.overhead_gb * 1e9);
  ctx.serving.max_num_seqs = f.max_num_seqs;
  ctx.serving.max_batched_tokens = f.max_batched_tokens;
  if (!f.factors_file.empty()) {
    CARVE_ASSIGN_OR_RETURN(std::string text, ReadFile(f.factors_file));
    CARVE_ASSIGN_OR_RETURN(ctx.factors, ParseFactorsJson(text));
  }
  if (f.compute_eff > 0) ctx.factors.compute = f.compute_eff;
  if (f.bandwidth_eff > 0) ctx.factors.bandwidth = f.bandwidth_eff;
  if (f.compute_eff > 0 || f.bandwidth_eff > 0) ctx.factors.source = "command line";
  CARVE_RETURN_IF_ERROR(ValidateFactors(ctx.factors));
  if (f.deadline_s <= 0) {
    return InvalidArgument(fmt::format("--deadline-s={} must be > 0", f.deadline_s));
  }
  ctx.sim.deadline_seconds = f.deadline_s;
  if (!f.prices_file.empty()) {
    CARVE_ASSIGN_OR_RETURN(std::string text, ReadFile(f.prices_file));
    CARVE_ASSIGN_OR_RETURN(ctx.prices, catalog::LoadPriceOverrides(text));
  }
  for (const std::string& p : f.prices) {
    size_t eq = p.find('=');
    double usd = -1;
    try {
      if (eq != std::string::npos) usd = std::stod(p.substr(eq + 1));
    } catch (const std::exception&) {
    }
    if (eq == std::string::npos || usd < 0) {
      return InvalidArgument(fmt::format("--price '{}' is not TYPE=USD_PER_HOUR", p));
    }
    CARVE_ASSIGN_OR_RETURN(const catalog::InstanceType* type,
                           catalog::FindInstanceType(p.substr(0, eq)));
    ctx.prices[std::string(type->id)] = usd;
  }
  ctx.instance_type = f.instance_type;
  return ctx;
}

// Prints an error and sets exit code 2; returns true when `r` failed.
template <typename T>
bool Failed(const Result<T>& r, Context& ctx) {
  if (r.has_value()) return false;
  std::cerr << "carve plan: " << r.error().message << "\n";
  ctx.exit_code = 2;
  return true;
}

std::string Ms(double s) { return fmt::format("{:.1f}", s * 1e3); }
std::string Usd(const std::optional<double>& v) { return v ? fmt::format("{:.4f}", *v) : "?"; }

std::vector<std::string> CellRow(const PricedCell& pc) {
  const CellResult& c = pc.cell;
  return {std::to_string(c.concurrency), fmt::format("{:.1f}", c.output_tok_s), Ms(c.ttft_p50_s),
          Ms(c.itl_p50_s),               fmt::format("{:.2f}", c.e2e_p50_s),
          fmt::format("{:.1f}", c.deadline_miss_fraction * 100), std::string(ResourceName(c.binding)),
          std::to_string(c.batch_limit), Usd(pc.usd_per_mtok)};
}

const std::vector<std::string> kCellHeader = {"conc", "tok/s", "ttft_p50_ms", "itl_p50_ms",
                                              "e2e_p50_s", "miss%", "binding", "batch_max",
                                              "usd/Mtok"};


void RunModels(Context& ctx) {
  std::vector<ModelSpec> models = AllModels();
  if (ctx.json) {
    Json out = Json::array();
    for (const ModelSpec& m : models) out.push_back(ModelJson(m));
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::vector<std::vector<std::string>> rows = {{"id", "kind", "params", "layers", "hidden",
                                                 "heads", "kv_heads", "head_dim", "vocab",
                                                 "context", "weights_bf16", "kv/token_bf16"}};
  for (const ModelSpec& m : models) {
    rows.push_back({m.id, m.kind == ModelKind::kEncoder ? "encoder" : "decoder",
                    fmt::format("{:.2f}B", m.params / 1e9), std::to_string(m.layers),
                    std::to_string(m.hidden), std::to_string(m.heads),
                    std::to_string(m.kv_heads), std::to_string(m.head_dim),
                    std::to_string(m.vocab), std::to_string(m.default_context),
                    FormatGb(WeightBytes(m, Dtype::kBf16)),
                    fmt::format("{} KiB", KvBytesPerToken(m, Dtype::kBf16) / 1024)});
  }
  PrintTable(rows);
}

struct FitFlags {
  PlanFlags plan;
  int64_t context = 0;
  int concurrency = 1;
  std::string gpu;
};

void RunFit(const FitFlags& f, Context& ctx) {
  auto pc = ResolveContext(f.plan);
  if (Failed(pc, ctx)) return;
  FitRequest req{pc->precision, f.context > 0 ? f.context : pc->model.default_context,
                 f.concurrency, pc->serving.overhead_bytes};
  std::vector<Target> targets;
  if (f.gpu.empty()) {
    targets = EnumerateTargets({});
  } else if (f.gpu.find(':') != std::string::npos) {
    auto t = ParseTargets(f.gpu);
    if (Failed(t, ctx)) return;
    targets = *t;
  } else {
    auto g = catalog::FindGpu(f.gpu);
    if (Failed(g, ctx)) return;
    targets = EnumerateTargets({*g});
  }
  Json results = Json::array();
  std::vector<std::vector<std::string>> rows = {{"target", "memory", "weights", "kv", "overhead",
                                                 "headroom", "fits", "max_context",
                                                 "max_concurrency"}};
  std::vector<std::string> warnings, skipped;
  bool any_fits = false;
  for (const Target& t : targets) {
    auto r = FitOnTarget(pc->model, req, t);
    if (!r) {
      skipped.push_back(fmt::format("{}: {}", t.Name(), r.error().message));
      continue;
    }
    any_fits = any_fits || r->fits;
    results.push_back(FitJson(t, *r));
    rows.push_back({t.Name(), FormatGb(r->memory_bytes), FormatGb(r->weight_bytes),
                    FormatGb(r->kv_bytes), FormatGb(r->overhead_bytes),
                    FormatGb(r->headroom_bytes), r->fits ? "yes" : "no",
                    std::to_string(r->max_context), std::to_string(r->max_concurrency)});
    if (!r->warning.empty()) warnings.push_back(fmt::format("{}: {}", t.Name(), r->warning));
  }
  if (ctx.json) {
    Json out{{"model", pc->model.id},
             {"precision", PrecisionName(pc->precision)},
             {"context_tokens", req.context_tokens},
             {"concurrency", req.concurrency},
             {"kv_bytes_per_token", KvBytesPerToken(pc->model, pc->precision.kv)},
             {"targets", results},
             {"skipped", skipped}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << fmt::format(
        "{} ({}): weights {}, KV {} B/token, {} tokens x {} sequences, overhead {}\n",
        pc->model.id, PrecisionName(pc->precision),
        FormatGb(WeightBytes(pc->model, pc->precision.weights)),
        KvBytesPerToken(pc->model, pc->precision.kv), req.context_tokens, req.concurrency,
        FormatGb(req.overhead_bytes));
    PrintTable(rows);
    for (const std::string& w : warnings) std::cout << "warning: " << w << "\n";
    for (const std::string& s : skipped) std::cout << "skipped: " << s << "\n";
  }
  if (!any_fits) ctx.exit_code = 1;
}

struct PerfFlags {
  PlanFlags plan;
  std::string target, targets, scenario, scenarios, concurrency = "1,2,4,...,512";
  std::string svg_dir;
};

void RunPerf(const PerfFlags& f, Context& ctx) {
  auto pc = ResolveContext(f.plan);
  if (Failed(pc, ctx)) return;
  auto targets = ParseTargets(f.target);
  if (Failed(targets, ctx)) return;
  auto scenarios = ParseScenarios(f.scenario);
  if (Failed(scenarios, ctx)) return;
  auto ladder = ParseConcurrency(f.concurrency);
  if (Failed(ladder, ctx)) return;
  Json out{{"context", ContextJson(*pc)}, {"targets", Json::array()}};
  for (const Target& t : *targets) {
    auto model = ModelFor(*pc, t);
    if (!model) {
      std::cerr << "carve plan: " << t.Name() << ": " << model.error().message << "\n";
      ctx.exit_code = model.error().code == ErrorCode::kFailedPrecondition ? 1 : 2;
      return;
    }
    auto price = PriceTarget(t, pc->prices, pc->instance_type);
    if (Failed(price, ctx)) return;
    Json tj{{"target", t.Name()},
            {"hardware", HardwareJson(model->hardware())},
            {"price", PriceJson(*price)},
            {"kv_capacity_tokens", model->KvCapacityTokens()},
            {"scenarios", Json::array()}};
    if (!ctx.json) {
      const Hardware& h = model->hardware();
      std::cout << fmt::format(
          "{} ({}): {} SMs{}, {:.0f} TFLOP/s peak, {:.0f} GB/s, {} memory, KV holds {} tokens; "
          "{}\n",
          t.Name(), PrecisionName(pc->precision), h.sms,
          h.sms_from_catalog ? "" : " (assumed from compute slices)", h.peak_flops / 1e12,
          h.bandwidth_bytes_s / 1e9, FormatGb(h.memory_bytes), model->KvCapacityTokens(),
          price->known ? fmt::format("${:.4f}/h ({:.3f} of a GPU on {})", price->usd_per_hour,
                                     price->gpu_share, price->instance_type)
                       : "price unknown: " + price->source);
    }
    for (const Scenario& sc : *scenarios) {
      std::vector<PricedCell> cells = PredictCells(*model, *price, sc, *ladder, pc->sim);
      Json cj = Json::array();
      std::vector<std::vector<std::string>> rows = {kCellHeader};
      for (const PricedCell& c : cells) {
        cj.push_back(CellJson(c));
        rows.push_back(CellRow(c));
      }
      tj["scenarios"].push_back({{"scenario", sc.text}, {"note", sc.note}, {"cells", cj}});
      if (!ctx.json) {
        std::cout << "\nscenario " << sc.text << (sc.note.empty() ? "" : " (" + sc.note + ")")
                  << "\n";
        PrintTable(rows);
      }
    }
    out["targets"].push_back(std::move(tj));
    if (!ctx.json) std::cout << "\n";
  }
  if (ctx.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "note: " << ModelDisclaimer(*pc) << "\n";
  }
}

std::string FileSafe(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

void RunCompare(const PerfFlags& f, Context& ctx) {
  auto pc = ResolveContext(f.plan);
  if (Failed(pc, ctx)) return;
  auto targets = ParseTargets(f.targets);
  if (Failed(targets, ctx)) return;
  auto scenarios = ParseScenarios(f.scenarios);
  if (Failed(scenarios, ctx)) return;
  auto ladder = ParseConcurrency(f.concurrency);
  if (Failed(ladder, ctx)) return;
  auto cmp = Compare(*pc, *targets, *scenarios, *ladder);
  if (Failed(cmp, ctx)) return;
  std::vector<std::string> svgs;
  if (!f.svg_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(f.svg_dir, ec);
    for (size_t i = 0; i < cmp->scenarios.size(); ++i) {
      std::string path = (std::filesystem::path(f.svg_dir) /
                          ("compare_" + FileSafe(cmp->scenarios[i].scenario.text) + ".svg"))
                             .string();
      std::ofstream(path) << ComparisonSvg(*cmp, i);
      svgs.push_back(path);
    }
  }
  if (ctx.json) {
    Json out = ComparisonJson(*pc, *cmp);
    out["svg_files"] = svgs;
    std::cout << out.dump(2) << "\n";
    return;
  }
  const std::vector<Target>& ts = cmp->targets;
  for (size_t i = 0; i < ts.size(); ++i) {
    const TargetPrice& p = cmp->prices[i];
    std::cout << fmt::format("{}{}: {}\n", ts[i].Name(), i == 0 ? " (baseline)" : "",
                             p.known ? fmt::format("${:.4f}/h, {:.3f} of a GPU on {}",
                                                   p.usd_per_hour, p.gpu_share, p.instance_type)
                                     : "price unknown");
  }
  for (const ScenarioComparison& s : cmp->scenarios) {
    std::cout << "\nscenario " << s.scenario.text
              << (s.scenario.note.empty() ? "" : " (" + s.scenario.note + ")") << "\n";
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header = {"conc"};
    for (size_t i = 0; i < ts.size(); ++i) {
      std::string n = ts[i].Name();
      for (const char* col : {" tok/s", " itl_ms", " ttft_ms", " usd/Mtok"}) header.push_back(n + col);
      if (i > 0) {
        for (const char* col : {" x_tok/s", " itl%", " ttft%", " driver"}) header.push_back(n + col);
      }
    }
    rows.push_back(header);
    for (const CompareRow& r : s.rows) {
      std::vector<std::string> row = {std::to_string(r.concurrency)};
      for (size_t i = 0; i < ts.size(); ++i) {
        const CellResult& c = r.cells[i].cell;
        row.push_back(fmt::format("{:.0f}", c.output_tok_s));
        row.push_back(Ms(c.itl_p50_s));
        row.push_back(Ms(c.ttft_p50_s));
        row.push_back(Usd(r.cells[i].usd_per_mtok));
        if (i > 0) {
          row.push_back(fmt::format("{:.2f}", r.tok_s_ratio[i]));
          row.push_back(fmt::format("{:+.1f}", r.itl_diff_pct[i]));
          row.push_back(fmt::format("{:+.1f}", r.ttft_diff_pct[i]));
          row.push_back(r.drivers[i] + "; ttft: " + r.ttft_drivers[i]);
        }
      }
      rows.push_back(std::move(row));
    }
    PrintTable(rows);
    for (const Crossover& x : s.crossovers) {
      std::cout << fmt::format(
          "  {} is cheapest {}\n", ts[x.target].Name(),
          x.cheaper_from ? fmt::format("from concurrency {} up", *x.cheaper_from)
          : x.cheapest_at.empty() ? std::string("nowhere on this ladder")
                                  : fmt::format("at {} concurrencies, not at the top",
                                                x.cheapest_at.size()));
    }
  }
  for (const std::string& p : svgs) std::cout << "wrote " << p << "\n";
  std::cout << "note: " << ModelDisclaimer(*pc) << "\n";
}

struct CalibrateFlags {
  PlanFlags plan;
  std::string bench_file, target, out_file;
};

void RunCalibrate(CalibrateFlags f, Context& ctx) {
  auto text = ReadFile(f.bench_file);
  if (Failed(text, ctx)) return;
  auto bench = ParseBenchJson(*text);
  if (Failed(bench, ctx)) return;
  if (f.plan.model.empty() && f.plan.model_file.empty()) f.plan.model = bench->model;
  if (f.plan.precision.empty()) f.plan.precision = bench->precision;
  auto pc = ResolveContext(f.plan);
  if (Failed(pc, ctx)) return;
  auto target = ParseTarget(f.target.empty() ? bench->target : f.target);
  if (Failed(target, ctx)) return;
  auto hw = HardwareFor(*target, pc->precision);
  if (Failed(hw, ctx)) return;
  auto fit = Calibrate(pc->model, pc->precision, *hw, pc->serving, bench->cells, pc->sim);
  if (Failed(fit, ctx)) return;
  std::string factors = WriteFactorsJson(fit->factors);
  if (!f.out_file.empty()) std::ofstream(f.out_file) << factors << "\n";
  if (ctx.json) {
    std::cout << Json{{"model", pc->model.id},
                      {"target", target->Name()},
                      {"compute", fit->factors.compute},
                      {"bandwidth", fit->factors.bandwidth},
                      {"rms_log_error", fit->rms_log_error},
                      {"metrics_used", fit->metrics_used},
                      {"source", fit->factors.source}}
                     .dump(2)
              << "\n";
    return;
  }
  std::cout << fmt::format(
      "{} on {}: compute efficiency {:.3f}, bandwidth efficiency {:.3f} ({})\n", pc->model.id,
      target->Name(), fit->factors.compute, fit->factors.bandwidth, fit->factors.source);
  if (!f.out_file.empty()) std::cout << "wrote " << f.out_file << " (use with --factors)\n";
}

struct RecommendFlags {
  PlanFlags plan;
  std::string scenario = "D(2000,200)", slo, fleet, driver;
  int concurrency = 16;
  int copies = 1;
};

void RunRecommend(const RecommendFlags& f, Context& ctx) {
  auto pc = ResolveContext(f.plan);
  if (Failed(pc, ctx)) return;
  RecommendRequest req;
  auto sc = ParseScenario(f.scenario);
  if (Failed(sc, ctx)) return;
  req.scenario = *sc;
  req.concurrency = f.concurrency;
  req.copies = f.copies;
  auto slo = ParseSlo(f.slo);
  if (Failed(slo, ctx)) return;
  req.slo = *slo;
  if (!f.fleet.empty()) {
    auto fleet = ParseFleet(f.fleet);
    if (Failed(fleet, ctx)) return;
    req.fleet = *fleet;
  }
  if (!f.driver.empty()) {
    auto d = catalog::DriverVersion::Parse(f.driver);
    if (Failed(d, ctx)) return;
    req.driver = *d;
  }
  auto rec = Recommend(*pc, req);
  if (Failed(rec, ctx)) return;
  if (rec->ranked.empty()) ctx.exit_code = 1;
  if (ctx.json) {
    std::cout << RecommendationJson(*pc, *rec).dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} ({}), {} at concurrency {}, SLO '{}'\n", pc->model.id,
                           PrecisionName(pc->precision), req.scenario.text, req.concurrency,
                           f.slo);
  std::vector<std::vector<std::string>> rows = {
      {"rank", "target", "usd/Mtok", "usd/h", "tok/s", "ttft_p50_ms", "itl_p50_ms", "binding"}};
  int rank = 0;
  for (const OptionResult& o : rec->ranked) {
    rows.push_back({std::to_string(++rank), o.target.Name(), Usd(o.usd_per_mtok),
                    fmt::format("{:.4f}", o.price.usd_per_hour),
                    fmt::format("{:.0f}", o.cell->output_tok_s), Ms(o.cell->ttft_p50_s),
                    Ms(o.cell->itl_p50_s), std::string(ResourceName(o.cell->binding))});
  }
  if (rank == 0) std::cout << "no option meets the SLO\n"; else PrintTable(rows);
  std::cout << "\nruled out:\n";
  std::vector<std::vector<std::string>> out = {{"target", "why", "detail"}};
  for (const OptionResult& o : rec->ruled_out) {
    out.push_back({o.target.Name(), std::string(RuledOutName(o.ruled_out)), o.reason});
  }
  PrintTable(out);
  if (rec->layout) {
    const LayoutSuggestion& s = *rec->layout;
    std::string profiles;
    for (const core::PlacedInstance& p : s.layout.instances) {
      profiles += fmt::format("{}mig-{}@{}", profiles.empty() ? "" : ", ", p.profile->name,
                              p.start);
    }
    std::cout << fmt::format("\nlayout for the fleet: {} x {} [{}]: {}\n", s.gpus_used, s.gpu->id,
                             profiles.empty() ? "whole GPU" : profiles, s.note);
  } else if (!req.fleet.empty()) {
    std::cout << "\nlayout for the fleet: none (no option on the fleet's GPUs meets the SLO)\n";
  }
  std::cout << "note: " << ModelDisclaimer(*pc) << "\n";
}

}  // namespace

void RegisterPlanCommands(CLI::App& app, Context& ctx) {
  CLI::App* plan = app.add_subcommand(
      "plan", "Right-size a partition for a model and its traffic (a model, not a measurement)");
  plan->require_subcommand(1);

  plan->add_subcommand("models", "List the model catalog")->callback([&ctx] { RunModels(ctx); });

  auto fit = std::make_shared<FitFlags>();
  CLI::App* fit_cmd = plan->add_subcommand("fit", "Memory fit on every partition and whole GPU");
  AddModelFlags(fit_cmd, fit->plan);
  fit_cmd->add_option("--context", fit->context, "Tokens per sequence (default: model's max)");
  fit_cmd->add_option("--concurrency", fit->concurrency, "Concurrent sequences (default 1)");
  fit_cmd->add_option("--gpu", fit->gpu, "Only this GPU, or targets like h100-80gb:3g.40gb");
  fit_cmd->callback([fit, &ctx] { RunFit(*fit, ctx); });

  auto perf = std::make_shared<PerfFlags>();
  CLI::App* perf_cmd = plan->add_subcommand("perf", "Predict throughput, latency and cost");
  AddPerfFlags(perf_cmd, perf->plan);
  perf_cmd->add_option("--target", perf->target, "gpu[:profile], comma-separated")->required();
  perf_cmd->add_option("--scenario", perf->scenario, "D(in,out) or N(mi,si)/(mo,so); ';' list")
      ->required();
  perf_cmd->add_option("--concurrency", perf->concurrency, "e.g. 1,2,4,...,512 or 2..512");
  perf_cmd->callback([perf, &ctx] { RunPerf(*perf, ctx); });

  auto cmp = std::make_shared<PerfFlags>();
  cmp->scenarios = "N(480,240)/(300,150);D(100,100);D(100,1000);D(2000,200);D(7800,200)";
  cmp->concurrency = "2..512";
  CLI::App* cmp_cmd = plan->add_subcommand("compare", "Compare targets per scenario and load");
  AddPerfFlags(cmp_cmd, cmp->plan);
  cmp_cmd->add_option("--targets", cmp->targets, "Baseline first: a100-40gb,h100-80gb:3g.40gb")
      ->required();
  cmp_cmd->add_option("--scenarios", cmp->scenarios, "Default: genai-bench's five chat shapes");
  cmp_cmd->add_option("--concurrency", cmp->concurrency, "Default 2..512");
  cmp_cmd->add_option("--svg-dir", cmp->svg_dir, "Write one SVG plot per scenario here");
  cmp_cmd->callback([cmp, &ctx] { RunCompare(*cmp, ctx); });

  auto cal = std::make_shared<CalibrateFlags>();
  CLI::App* cal_cmd =
      plan->add_subcommand("calibrate", "Fit the efficiency factors to a bench result");
  AddPerfFlags(cal_cmd, cal->plan);
  cal_cmd->add_option("bench", cal->bench_file, "bench JSON (docs/planner.md)")->required();
  cal_cmd->add_option("--target", cal->target, "Override the bench file's target");
  cal_cmd->add_option("-o,--out", cal->out_file, "Write the factors JSON here");
  cal_cmd->callback([cal, &ctx] { RunCalibrate(*cal, ctx); });

  auto rec = std::make_shared<RecommendFlags>();
  CLI::App* rec_cmd =
      plan->add_subcommand("recommend", "Cheapest options that meet an SLO, and a fleet layout");
  AddPerfFlags(rec_cmd, rec->plan);
  rec_cmd->add_option("--scenario", rec->scenario, "Default D(2000,200)");
  rec_cmd->add_option("--concurrency", rec->concurrency, "Concurrent requests per copy (16)");
  rec_cmd->add_option("--slo", rec->slo, "e.g. 'ttft_p50<=800ms,itl_p50<=40ms'");
  rec_cmd->add_option("--fleet", rec->fleet, "GPUs you have, e.g. a100-40gb:8,h100-80gb:8");
  rec_cmd->add_option("--copies", rec->copies, "Copies to pack onto the fleet (default 1)");
  rec_cmd->add_option("--driver", rec->driver, "Fleet driver, e.g. 470.256.02");
  rec_cmd->callback([rec, &ctx] { RunRecommend(*rec, ctx); });
}

}  // namespace carve::cli
