#include "planner/calibrate.h"

#include <gtest/gtest.h>

#include "planner/model_catalog.h"
#include "planner/plan_context.h"

namespace carve::planner {
namespace {

Hardware H100Half() {
  return HardwareFor(ParseTarget("h100-80gb:3g.40gb").value(), {}).value();
}

// Generates a bench file from the model itself at known factors, writes it as JSON, reads it
// back and fits: the fit must land on the generating factors.
TEST(Calibrate, RecoversTheFactorsThatGeneratedASyntheticBenchFile) {
  ModelSpec m = FindModel("llama-3.1-8b").value();
  Hardware hw = H100Half();
  EfficiencyFactors truth{0.42, 0.71, "truth"};
  PerfModel model = PerfModel::Create(m, {}, hw, truth).value();
  BenchResult bench{"llama-3.1-8b", "h100-80gb:3g.40gb", "bf16", {}};
  SimOptions sim{60, 2};
  for (const char* sc : {"D(2000,200)", "D(100,300)"}) {
    Scenario s = ParseScenario(sc).value();
    for (int c : {1, 8, 32}) {
      CellResult r = SimulateCell(model, s, c, sim);
      bench.cells.push_back(BenchCell{s, c, r.output_tok_s, r.ttft_p50_s, r.itl_p50_s,
                                      r.e2e_p50_s});
    }
  }
  BenchResult parsed = ParseBenchJson(WriteBenchJson(bench)).value();
  ASSERT_EQ(parsed.cells.size(), bench.cells.size());
  auto fit = Calibrate(m, {}, hw, {}, parsed.cells, sim);
  ASSERT_TRUE(fit.has_value()) << fit.error().message;
  EXPECT_NEAR(fit->factors.compute, 0.42, 0.01);
  EXPECT_NEAR(fit->factors.bandwidth, 0.71, 0.01);
  EXPECT_LT(fit->rms_log_error, 0.01);
  EXPECT_EQ(fit->metrics_used, 18);
}

TEST(Calibrate, RefusesABenchWithNothingToFit) {
  ModelSpec m = FindModel("llama-3.1-8b").value();
  std::vector<BenchCell> cells = {BenchCell{ParseScenario("D(10,10)").value(), 1, {}, {}, {}, {}}};
  auto fit = Calibrate(m, {}, H100Half(), {}, cells);
  ASSERT_FALSE(fit.has_value());
  EXPECT_EQ(fit.error().code, ErrorCode::kInvalidArgument);
}

TEST(ParseBenchJson, NamesTheMissingField) {
  auto r = ParseBenchJson(R"js({"model":"llama-3.1-8b","cells":[]})js");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("'target'"), std::string::npos);
  auto c = ParseBenchJson(
      R"js({"model":"m","target":"t","cells":[{"scenario":"D(1,1)","concurrency":0}]})js");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("cells[0]"), std::string::npos);
}

TEST(ParseBenchJson, ReadsMillisecondsAsSeconds) {
  auto r = ParseBenchJson(R"js({"model":"m","target":"t","cells":[{"scenario":"D(2000,200)",
      "concurrency":4,"output_tok_s":500,"ttft_p50_ms":120,"itl_p50_ms":12.5}]})js");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_DOUBLE_EQ(*r->cells[0].ttft_p50_s, 0.12);
  EXPECT_DOUBLE_EQ(*r->cells[0].itl_p50_s, 0.0125);
  EXPECT_FALSE(r->cells[0].e2e_p50_s.has_value());
}

TEST(FactorsJson, RoundTripsAndValidates) {
  EfficiencyFactors f = ParseFactorsJson(WriteFactorsJson({0.3, 0.8, "x"})).value();
  EXPECT_DOUBLE_EQ(f.compute, 0.3);
  EXPECT_DOUBLE_EQ(f.bandwidth, 0.8);
  EXPECT_FALSE(ParseFactorsJson(R"js({"compute":0,"bandwidth":0.5})js").has_value());
}

}  // namespace
}  // namespace carve::planner
