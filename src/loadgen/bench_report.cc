#include "loadgen/bench_report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/svg_plot.h"

namespace carve::loadgen {
namespace {

using nlohmann::json;

json Ms(const std::optional<double>& seconds) {
  return seconds ? json(*seconds * 1e3) : json(nullptr);
}

std::optional<double> OptMs(const json& cell, const char* key) {
  if (!cell.contains(key) || !cell[key].is_number()) return std::nullopt;
  return cell[key].get<double>() * 1e-3;
}

template <typename T>
T Get(const json& obj, const char* key, T fallback) {
  if (!obj.contains(key) || obj[key].is_null()) return fallback;
  return obj[key].get<T>();
}

std::string Field(const std::optional<double>& v, double scale, int decimals) {
  return v ? fmt::format("{:.{}f}", *v * scale, decimals) : std::string();
}

Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Unavailable("cannot write " + path.string());
  return OkStatus();
}

Status MakeDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unavailable("cannot create directory " + dir + ": " + ec.message());
  return OkStatus();
}

}  // namespace

std::string WriteBenchRunJson(const BenchRun& run) {
  json cells = json::array();
  for (const BenchCellResult& c : run.cells) {
    const CellMetrics& m = c.metrics;
    cells.push_back({{"scenario", c.scenario},
                     {"concurrency", c.concurrency},
                     {"output_tok_s", m.output_tok_s},
                     {"requests_per_s", m.requests_per_s},
                     {"ttft_p50_ms", Ms(m.ttft_p50_s)},
                     {"ttft_p90_ms", Ms(m.ttft_p90_s)},
                     {"ttft_p99_ms", Ms(m.ttft_p99_s)},
                     {"itl_p50_ms", Ms(m.itl_p50_s)},
                     {"itl_p99_ms", Ms(m.itl_p99_s)},
                     {"e2e_p50_ms", Ms(m.e2e_p50_s)},
                     {"e2e_p99_ms", Ms(m.e2e_p99_s)},
                     {"requests", m.requests},
                     {"errors", m.errors},
                     {"deadline_failures", m.deadline_failures},
                     {"error_rate", m.error_rate()},
                     {"output_tokens", m.output_tokens},
                     {"wall_s", m.wall_s},
                     {"usd_per_million_output_tokens",
                      c.usd_per_million_tokens ? json(*c.usd_per_million_tokens) : json(nullptr)},
                     {"first_error", m.first_error}});
  }
  json price = {{"priced", run.priced},           {"usd_per_hour", run.usd_per_hour},
                {"gpu_share", run.gpu_share},     {"instance_share", run.instance_share},
                {"instance_type", run.instance_type}, {"source", run.price_source}};
  json doc = {{"schema", "carve.bench.v1"}, {"generator", "carve bench"},
              {"name", run.name},           {"model", run.model},
              {"target", run.target},       {"precision", run.precision},
              {"endpoint", run.endpoint},   {"seed", run.seed},
              {"price", price},             {"cells", cells}};
  return doc.dump(2);
}

Result<BenchRun> ParseBenchRunJson(std::string_view text) {
  BenchRun run;
  try {
    json doc = json::parse(text);
    if (!doc.is_object()) return InvalidArgument("bench JSON must be an object");
    if (!doc.contains("cells") || !doc["cells"].is_array()) {
      return InvalidArgument("bench JSON lacks the array 'cells'");
    }
    run.model = Get<std::string>(doc, "model", "unknown");
    run.target = Get<std::string>(doc, "target", "");
    run.name = Get<std::string>(doc, "name", run.target);
    run.precision = Get<std::string>(doc, "precision", "bf16");
    run.endpoint = Get<std::string>(doc, "endpoint", "");
    run.seed = Get<uint64_t>(doc, "seed", 0);
    if (doc.contains("price") && doc["price"].is_object()) {
      const json& p = doc["price"];
      run.priced = Get<bool>(p, "priced", false);
      run.usd_per_hour = Get<double>(p, "usd_per_hour", 0);
      run.gpu_share = Get<double>(p, "gpu_share", 0);
      run.instance_share = Get<double>(p, "instance_share", 0);
      run.instance_type = Get<std::string>(p, "instance_type", "");
      run.price_source = Get<std::string>(p, "source", "");
    }
    size_t i = 0;
    for (const json& cell : doc["cells"]) {
      if (!cell.is_object() || !cell.contains("scenario") || !cell["scenario"].is_string() ||
          !cell.contains("concurrency") || !cell["concurrency"].is_number_integer()) {
        return InvalidArgument(fmt::format(
            "bench JSON cells[{}] needs a string 'scenario' and an integer 'concurrency'", i));
      }
      BenchCellResult c;
      c.scenario = cell["scenario"].get<std::string>();
      c.concurrency = cell["concurrency"].get<int>();
      CellMetrics& m = c.metrics;
      m.output_tok_s = Get<double>(cell, "output_tok_s", 0);
      m.requests_per_s = Get<double>(cell, "requests_per_s", 0);
      m.ttft_p50_s = OptMs(cell, "ttft_p50_ms");
      m.ttft_p90_s = OptMs(cell, "ttft_p90_ms");
      m.ttft_p99_s = OptMs(cell, "ttft_p99_ms");
      m.itl_p50_s = OptMs(cell, "itl_p50_ms");
      m.itl_p99_s = OptMs(cell, "itl_p99_ms");
      m.e2e_p50_s = OptMs(cell, "e2e_p50_ms");
      m.e2e_p99_s = OptMs(cell, "e2e_p99_ms");
      m.requests = Get<int64_t>(cell, "requests", 0);
      m.errors = Get<int64_t>(cell, "errors", 0);
      m.deadline_failures = Get<int64_t>(cell, "deadline_failures", 0);
      m.output_tokens = Get<int64_t>(cell, "output_tokens", 0);
      m.wall_s = Get<double>(cell, "wall_s", 0);
      m.first_error = Get<std::string>(cell, "first_error", "");
      if (cell.contains("usd_per_million_output_tokens") &&
          cell["usd_per_million_output_tokens"].is_number()) {
        c.usd_per_million_tokens = cell["usd_per_million_output_tokens"].get<double>();
      }
      run.cells.push_back(std::move(c));
      ++i;
    }
  } catch (const json::exception& e) {
    return InvalidArgument(fmt::format("bench JSON does not parse: {}", e.what()));
  }
  return run;
}

std::string WriteBenchCsv(const BenchRun& run) {
  std::string out =
      "target,scenario,concurrency,output_tok_s,requests_per_s,ttft_p50_ms,ttft_p90_ms,"
      "ttft_p99_ms,itl_p50_ms,itl_p99_ms,e2e_p50_ms,e2e_p99_ms,requests,errors,"
      "deadline_failures,error_rate,usd_per_million_output_tokens\n";
  for (const BenchCellResult& c : run.cells) {
    const CellMetrics& m = c.metrics;
    // Scenario texts hold commas: quote them.
    out += fmt::format("\"{}\",\"{}\",{},{:.3f},{:.4f},{},{},{},{},{},{},{},{},{},{},{:.4f},{}\n",
                       run.name, c.scenario, c.concurrency, m.output_tok_s, m.requests_per_s,
                       Field(m.ttft_p50_s, 1e3, 3), Field(m.ttft_p90_s, 1e3, 3),
                       Field(m.ttft_p99_s, 1e3, 3), Field(m.itl_p50_s, 1e3, 3),
                       Field(m.itl_p99_s, 1e3, 3), Field(m.e2e_p50_s, 1e3, 3),
                       Field(m.e2e_p99_s, 1e3, 3), m.requests, m.errors, m.deadline_failures,
                       m.error_rate(), Field(c.usd_per_million_tokens, 1, 4));
  }
  return out;
}

std::string FormatBenchTable(const BenchRun& run) {
  std::string out = fmt::format("{} ({})\n", run.name, run.endpoint);
  if (run.priced) {
    out += fmt::format("price: ${:.4f}/h ({:.4g} of {}; {})\n", run.usd_per_hour,
                       run.instance_share, run.instance_type.empty() ? "-" : run.instance_type,
                       run.price_source);
  }
  out += fmt::format("{:<22} {:>5} {:>10} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>6} "
                     "{:>5} {:>9}\n",
                     "scenario", "conc", "out tok/s", "req/s", "ttft p50", "ttft p90", "ttft p99",
                     "itl p50", "itl p99", "e2e p50", "e2e p99", "err%", "dl", "$/Mtok");
  auto ms = [](const std::optional<double>& s) { return Field(s, 1e3, 1); };
  for (const BenchCellResult& c : run.cells) {
    const CellMetrics& m = c.metrics;
    out += fmt::format(
        "{:<22} {:>5} {:>10.1f} {:>7.2f} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>6.1f} {:>5} "
        "{:>9}\n",
        c.scenario, c.concurrency, m.output_tok_s, m.requests_per_s, ms(m.ttft_p50_s),
        ms(m.ttft_p90_s), ms(m.ttft_p99_s), ms(m.itl_p50_s), ms(m.itl_p99_s), ms(m.e2e_p50_s),
        ms(m.e2e_p99_s), m.error_rate() * 100, m.deadline_failures,
        Field(c.usd_per_million_tokens, 1, 4));
  }
  out += "times in ms; err% counts errors and deadline failures; dl = deadline failures\n";
  return out;
}

std::vector<std::string> ScenariosOf(const std::vector<BenchRun>& runs) {
  std::vector<std::string> out;
  for (const BenchRun& r : runs) {
    for (const BenchCellResult& c : r.cells) {
      if (std::find(out.begin(), out.end(), c.scenario) == out.end()) out.push_back(c.scenario);
    }
  }
  return out;
}

std::string ScenarioSvg(const std::vector<BenchRun>& runs, const std::string& scenario) {
  planner::PlotPanel tok{"Output tokens/s", "concurrency", "output tok/s", {}, true};
  planner::PlotPanel cost{"$ per million output tokens", "concurrency", "USD / M tokens", {}, true};
  bool any_cost = false;
  for (const BenchRun& r : runs) {
    planner::PlotSeries ts{r.name, {}}, cs{r.name, {}};
    for (const BenchCellResult& c : r.cells) {
      if (c.scenario != scenario) continue;
      ts.points.emplace_back(c.concurrency, c.metrics.output_tok_s);
      if (c.usd_per_million_tokens) {
        cs.points.emplace_back(c.concurrency, *c.usd_per_million_tokens);
        any_cost = true;
      }
    }
    std::sort(ts.points.begin(), ts.points.end());
    std::sort(cs.points.begin(), cs.points.end());
    tok.series.push_back(std::move(ts));
    cost.series.push_back(std::move(cs));
  }
  std::vector<planner::PlotPanel> panels{std::move(tok)};
  if (any_cost) panels.push_back(std::move(cost));
  return planner::RenderSvg("carve bench " + scenario, panels);
}

std::string ScenarioFileStem(std::string_view scenario) {
  std::string s;
  for (char c : scenario) {
    const bool keep = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (keep) {
      s += c;
    } else if (!s.empty() && s.back() != '_') {
      s += '_';
    }
  }
  while (!s.empty() && s.back() == '_') s.pop_back();
  return s;
}

Status WriteScenarioSvgs(const std::vector<BenchRun>& runs, const std::string& dir) {
  CARVE_RETURN_IF_ERROR(MakeDir(dir));
  for (const std::string& scenario : ScenariosOf(runs)) {
    CARVE_RETURN_IF_ERROR(WriteFile(std::filesystem::path(dir) / (ScenarioFileStem(scenario) + ".svg"),
                                    ScenarioSvg(runs, scenario)));
  }
  return OkStatus();
}

Status WriteBenchOutputs(const BenchRun& run, const std::string& dir) {
  CARVE_RETURN_IF_ERROR(MakeDir(dir));
  const std::filesystem::path d(dir);
  CARVE_RETURN_IF_ERROR(WriteFile(d / "bench.json", WriteBenchRunJson(run) + "\n"));
  CARVE_RETURN_IF_ERROR(WriteFile(d / "bench.csv", WriteBenchCsv(run)));
  return WriteScenarioSvgs({run}, dir);
}

}  // namespace carve::loadgen
