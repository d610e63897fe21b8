#include "loadgen/bench_report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "planner/calibrate.h"

namespace carve::loadgen {
namespace {

BenchCellResult Cell(const std::string& scenario, int c, double tok_s, std::optional<double> cost) {
  BenchCellResult r;
  r.scenario = scenario;
  r.concurrency = c;
  r.metrics.output_tok_s = tok_s;
  r.metrics.requests = 10;
  r.metrics.errors = 1;
  r.metrics.deadline_failures = 2;
  r.metrics.ttft_p50_s = 0.120;
  r.metrics.itl_p50_s = 0.015;
  r.metrics.e2e_p50_s = 1.5;
  r.usd_per_million_tokens = cost;
  return r;
}

BenchRun SampleRun() {
  BenchRun run;
  run.name = "h100 3g";
  run.model = "llama-3.1-8b";
  run.target = "h100-80gb:3g.40gb";
  run.endpoint = "openai-completions http://x";
  run.priced = true;
  run.usd_per_hour = 3.956;
  run.instance_share = 1.0 / 16;
  run.instance_type = "ml.p5.48xlarge";
  run.cells = {Cell("D(100,100)", 1, 60, 18.3), Cell("D(100,100)", 2, 110, 10.0),
               Cell("N(480,240)/(300,150)", 1, 50, std::nullopt)};
  return run;
}

TEST(BenchReport, JsonRoundTrips) {
  BenchRun run = SampleRun();
  auto back = ParseBenchRunJson(WriteBenchRunJson(run));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->name, run.name);
  EXPECT_EQ(back->target, run.target);
  EXPECT_TRUE(back->priced);
  ASSERT_EQ(back->cells.size(), 3u);
  EXPECT_EQ(back->cells[1].concurrency, 2);
  EXPECT_DOUBLE_EQ(*back->cells[1].usd_per_million_tokens, 10.0);
  EXPECT_NEAR(*back->cells[0].metrics.ttft_p50_s, 0.120, 1e-12);
  EXPECT_EQ(back->cells[0].metrics.deadline_failures, 2);
  EXPECT_FALSE(back->cells[2].usd_per_million_tokens.has_value());
}

TEST(BenchReport, JsonIsReadableByPlanCalibrate) {
  auto v1 = planner::ParseBenchJson(WriteBenchRunJson(SampleRun()));
  ASSERT_TRUE(v1.has_value()) << v1.error().message;
  EXPECT_EQ(v1->target, "h100-80gb:3g.40gb");
  ASSERT_EQ(v1->cells.size(), 3u);
  EXPECT_DOUBLE_EQ(*v1->cells[0].output_tok_s, 60);
  EXPECT_NEAR(*v1->cells[0].itl_p50_s, 0.015, 1e-12);
  EXPECT_EQ(v1->cells[2].scenario.input_tokens, 480);
}

TEST(BenchReport, ParseNamesTheBadCell) {
  auto r = ParseBenchRunJson(
      R"j({"cells":[{"scenario":"D(1,1)","concurrency":1},{"scenario":3}]})j");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("cells[1]"), std::string::npos);
}

TEST(BenchReport, CsvHasAHeaderAndARowPerCellWithQuotedScenarios) {
  std::string csv = WriteBenchCsv(SampleRun());
  std::istringstream in(csv);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_TRUE(lines[0].starts_with("target,scenario,concurrency,output_tok_s"));
  EXPECT_TRUE(lines[3].starts_with("\"h100 3g\",\"N(480,240)/(300,150)\",1,50.000"));
  EXPECT_TRUE(lines[3].ends_with(",")) << "unpriced cell leaves the cost empty";
}

TEST(BenchReport, SvgPlotsEachRunAndCostWhenPriced) {
  BenchRun a = SampleRun(), b = SampleRun();
  b.name = "a100 whole";
  std::string svg = ScenarioSvg({a, b}, "D(100,100)");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("h100 3g"), std::string::npos);
  EXPECT_NE(svg.find("a100 whole"), std::string::npos);
  EXPECT_NE(svg.find("per million"), std::string::npos);
  EXPECT_EQ(ScenarioSvg({a}, "N(480,240)/(300,150)").find("per million"), std::string::npos);
}

TEST(BenchReport, ScenarioFileStemsAreFileNames) {
  EXPECT_EQ(ScenarioFileStem("D(100,100)"), "D_100_100");
  EXPECT_EQ(ScenarioFileStem("N(480,240)/(300,150)"), "N_480_240_300_150");
}

TEST(BenchReport, WritesJsonCsvAndOneSvgPerScenario) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("carve-bench-report-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteBenchOutputs(SampleRun(), (dir / "out").string()).ok());
  for (const char* f : {"bench.json", "bench.csv", "D_100_100.svg", "N_480_240_300_150.svg"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / "out" / f)) << f;
  }
  std::filesystem::remove_all(dir);
}

TEST(BenchReport, TableHasARowPerCell) {
  std::string table = FormatBenchTable(SampleRun());
  EXPECT_NE(table.find("D(100,100)"), std::string::npos);
  EXPECT_NE(table.find("18.3000"), std::string::npos);
  EXPECT_NE(table.find("ttft p99"), std::string::npos);
}

}  // namespace
}  // namespace carve::loadgen
