// `carve bench`: drive an OpenAI-compatible server or carve's SageMaker runtime with genai-bench
// traffic shapes across a concurrency ladder (src/loadgen), and `carve bench compare`.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "catalog/price_overrides.h"
#include "cli/commands.h"
#include "loadgen/bench_compare.h"
#include "loadgen/bench_runner.h"
#include "loadgen/http_targets.h"
#include "planner/scenario.h"

namespace carve::cli {
namespace {

struct BenchFlags {
  std::string openai_url, model, api = "completions";
  bool no_ignore_eos = false;
  std::string endpoint_url, endpoint, component, credentials, profile = "default";
  std::string region;  // "": protocol::DefaultRegion().
  std::vector<std::string> scenarios;
  std::string concurrency;
  std::optional<double> duration_s;
  std::optional<int64_t> requests;
  double timeout_s = 300;
  uint64_t seed = 0;
  std::string instance_type, partition, prices_file, target_name, precision = "bf16", out_dir;
  int gpus = 0;
  std::optional<double> price_per_hour;
};

struct CompareFlags {
  std::string a, b, out_dir;
};

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<std::unique_ptr<loadgen::Target>> MakeTarget(const BenchFlags& f) {
  if (f.openai_url.empty() == f.endpoint_url.empty()) {
    return InvalidArgument("give exactly one target: --openai-url URL, or --endpoint-url URL "
                           "--endpoint NAME");
  }
  if (!f.openai_url.empty()) {
    if (f.api != "completions" && f.api != "chat") {
      return InvalidArgument("--api '" + f.api + "' must be completions or chat");
    }
    return loadgen::MakeOpenAiTarget(
        {f.openai_url, f.model,
         f.api == "chat" ? loadgen::OpenAiApi::kChat : loadgen::OpenAiApi::kCompletions,
         !f.no_ignore_eos});
  }
  protocol::ClientCredentials creds;
  if (!f.credentials.empty()) {
    CARVE_ASSIGN_OR_RETURN(creds, protocol::LoadClientCredentials(f.credentials, f.profile));
  }
  if (!f.region.empty()) creds.region = f.region;
  return loadgen::MakeRuntimeTarget({f.endpoint_url, f.endpoint, f.component, creds});
}

Result<loadgen::BenchOptions> MakeOptions(const BenchFlags& f) {
  loadgen::BenchOptions o;
  for (const std::string& text : f.scenarios) {
    CARVE_ASSIGN_OR_RETURN(auto list, loadgen::ParseLoadScenarios(text));
    o.scenarios.insert(o.scenarios.end(), list.begin(), list.end());
  }
  if (!f.concurrency.empty()) {
    CARVE_ASSIGN_OR_RETURN(o.concurrency, planner::ParseConcurrency(f.concurrency));
  }
  if (f.requests && *f.requests < 1) {
    return InvalidArgument("--requests " + std::to_string(*f.requests) + " must be >= 1");
  }
  if (f.duration_s && *f.duration_s <= 0) {
    return InvalidArgument("--duration " + std::to_string(*f.duration_s) + " must be > 0");
  }
  if (f.timeout_s <= 0) {
    return InvalidArgument("--timeout " + std::to_string(f.timeout_s) + " must be > 0");
  }
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1e3)); };
  o.requests = f.requests;
  if (f.duration_s) o.duration = ms(*f.duration_s);
  if (!o.requests && !o.duration) o.duration = std::chrono::seconds(60);
  o.timeout = ms(f.timeout_s);
  o.seed = f.seed;
  return o;
}

Result<loadgen::BenchPrice> MakePrice(const BenchFlags& f) {
  loadgen::CostOptions c{f.instance_type, f.partition, f.gpus, f.price_per_hour, {}};
  if (!f.prices_file.empty()) {
    CARVE_ASSIGN_OR_RETURN(std::string text, ReadFile(f.prices_file));
    CARVE_ASSIGN_OR_RETURN(c.overrides, catalog::LoadPriceOverrides(text));
  }
  return loadgen::PriceBenchTarget(c);
}

// 0 done; 1 every request failed; 2 input errors.
int RunBench(const BenchFlags& f, const Context& ctx) {
  auto fail = [](const Error& e) {
    std::cerr << "carve bench: " << e.message << "\n";
    return 2;
  };
  auto target = MakeTarget(f);
  if (!target) return fail(target.error());
  auto options = MakeOptions(f);
  if (!options) return fail(options.error());
  auto price = MakePrice(f);
  if (!price) return fail(price.error());

  loadgen::BenchRun run;
  run.endpoint = (*target)->Describe();
  run.model = f.model.empty() ? "unknown" : f.model;
  run.precision = f.precision;
  run.target = !price->target.empty() ? price->target : f.target_name;
  run.name = !f.target_name.empty() ? f.target_name
             : !price->target.empty() ? price->target
                                      : run.endpoint;
  if (run.target.empty()) run.target = run.name;
  const size_t cells = (options->scenarios.empty() ? 5 : options->scenarios.size()) *
                       (options->concurrency.empty() ? 9 : options->concurrency.size());
  loadgen::ProgressBar progress(std::cerr, isatty(STDERR_FILENO) == 1, static_cast<int>(cells));
  auto result = loadgen::RunBench(**target, *options, *price, std::move(run), &progress);
  if (!result) return fail(result.error());
  if (!f.out_dir.empty()) {
    Status written = loadgen::WriteBenchOutputs(*result, f.out_dir);
    if (!written.ok()) return fail(written.error());
  }
  if (ctx.json) {
    std::cout << loadgen::WriteBenchRunJson(*result) << "\n";
  } else {
    std::cout << loadgen::FormatBenchTable(*result);
    if (!f.out_dir.empty()) std::cout << "wrote bench.json, bench.csv and plots to " << f.out_dir << "\n";
  }
  int64_t ok = 0;
  for (const auto& c : result->cells) {
    ok += c.metrics.requests - c.metrics.errors - c.metrics.deadline_failures;
  }
  if (ok == 0) {
    std::cerr << "carve bench: every request failed; first error: "
              << (result->cells.empty() ? "" : result->cells.front().metrics.first_error) << "\n";
    return 1;
  }
  return 0;
}

int RunCompare(const CompareFlags& f, const Context& ctx) {
  std::vector<loadgen::BenchRun> runs;
  for (const std::string& path : {f.a, f.b}) {
    auto text = ReadFile(path);
    if (!text) {
      std::cerr << "carve bench compare: " << text.error().message << "\n";
      return 2;
    }
    auto run = loadgen::ParseBenchRunJson(*text);
    if (!run) {
      std::cerr << "carve bench compare: " << path << ": " << run.error().message << "\n";
      return 2;
    }
    if (run->name.empty()) run->name = path;
    runs.push_back(std::move(run).value());
  }
  if (runs[0].name == runs[1].name) {
    runs[0].name += " (A)";
    runs[1].name += " (B)";
  }
  loadgen::BenchComparison cmp = loadgen::CompareRuns(runs[0], runs[1]);
  if (ctx.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& x : cmp.crossovers) {
      out.push_back({{"scenario", x.scenario},
                     {"priced", x.priced},
                     {"b_cheaper_from", x.b_cheaper_from ? nlohmann::json(*x.b_cheaper_from)
                                                         : nlohmann::json(nullptr)}});
    }
    std::cout << nlohmann::json{{"a", cmp.a_name}, {"b", cmp.b_name}, {"crossovers", out}}.dump(2)
              << "\n";
  } else {
    std::cout << loadgen::FormatComparison(cmp);
  }
  if (!f.out_dir.empty()) {
    Status written = loadgen::WriteScenarioSvgs(runs, f.out_dir);
    if (!written.ok()) {
      std::cerr << "carve bench compare: " << written.error().message << "\n";
      return 2;
    }
    if (!ctx.json) std::cout << "wrote plots to " << f.out_dir << "\n";
  }
  return 0;
}

}  // namespace

void RegisterBenchCommands(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Load-test a model server with genai-bench traffic shapes across a concurrency ladder: "
      "output tok/s, req/s, TTFT, ITL, end-to-end latency, errors and $ per million output "
      "tokens per cell. Targets: any OpenAI-compatible URL (vLLM, carve testmodel) or carve's "
      "SageMaker runtime (SigV4, response streaming).");
  cmd->add_option("--openai-url", f->openai_url, "OpenAI-compatible server, http://host:port");
  cmd->add_option("--model", f->model, "Model name sent to the server and recorded");
  cmd->add_option("--api", f->api, "completions or chat")->capture_default_str();
  cmd->add_flag("--no-ignore-eos", f->no_ignore_eos,
                "Do not send vLLM's ignore_eos (outputs may end before max_tokens)");
  cmd->add_option("--endpoint-url", f->endpoint_url, "carve server URL, http://host:port");
  cmd->add_option("--endpoint", f->endpoint, "SageMaker endpoint name");
  cmd->add_option("--component", f->component, "Inference component name");
  cmd->add_option("--credentials", f->credentials, "AWS shared-credentials file (SigV4 keys)");
  cmd->add_option("--profile", f->profile, "Profile in the credentials file")
      ->capture_default_str();
  cmd->add_option("--region", f->region,
                  "SigV4 region: the server's (default: $AWS_REGION, else $AWS_DEFAULT_REGION, "
                  "else us-east-1)");
  cmd->add_option("--scenario", f->scenarios,
                  "D(in,out) or N(mean_in,sd_in)/(mean_out,sd_out); repeatable or ';'-separated "
                  "(default: genai-bench's D(100,100) D(100,1000) D(2000,200) D(7800,200) "
                  "N(480,240)/(300,150))");
  cmd->add_option("--concurrency", f->concurrency,
                  "Ladder: 1,2,4 or 2..512 or 1,2,4,...,512 (default 1..256)");
  cmd->add_option("--duration", f->duration_s, "Seconds per cell (default 60 without --requests)");
  cmd->add_option("--requests", f->requests, "Requests per cell (closed loop)");
  cmd->add_option("--timeout", f->timeout_s, "Per-request deadline in seconds")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "Seed for request lengths and prompts")->capture_default_str();
  cmd->add_option("--instance-type", f->instance_type, "Instance the target runs on, for cost");
  cmd->add_option("--partition", f->partition, "MIG profile the target holds, e.g. mig-3g.40gb");
  cmd->add_option("--gpus", f->gpus, "Whole GPUs the target holds (default 1)");
  cmd->add_option("--price-per-hour", f->price_per_hour,
                  "The target's own USD per hour (overrides instance price x share)");
  cmd->add_option("--prices", f->prices_file, "YAML file with a prices: map of instance prices");
  cmd->add_option("--target-name", f->target_name, "Label for tables, plots and compare");
  cmd->add_option("--precision", f->precision, "Precision label recorded in bench.json")
      ->capture_default_str();
  cmd->add_option("--out", f->out_dir, "Write bench.json, bench.csv and one SVG per scenario");

  auto cf = std::make_shared<CompareFlags>();
  CLI::App* cmp = cmd->add_subcommand(
      "compare", "Per-cell differences of two bench.json files (B against A) and the cost "
                 "crossover concurrency");
  cmp->add_option("a", cf->a, "Baseline bench.json")->required();
  cmp->add_option("b", cf->b, "Compared bench.json")->required();
  cmp->add_option("--out", cf->out_dir, "Write one SVG per scenario with both runs");
  cmp->callback([cf, &ctx] { ctx.exit_code = RunCompare(*cf, ctx); });
  cmd->callback([f, cmd, cmp, &ctx] {
    if (cmd->got_subcommand(cmp)) return;
    ctx.exit_code = RunBench(*f, ctx);
  });
}

}  // namespace carve::cli
