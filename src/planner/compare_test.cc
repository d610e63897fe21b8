#include "planner/compare.h"

#include <gtest/gtest.h>

#include "planner/model_catalog.h"
#include "planner/svg_plot.h"

namespace carve::planner {
namespace {

PlanContext Llama8b() {
  PlanContext ctx;
  ctx.model = FindModel("llama-3.1-8b").value();
  ctx.sim.requests_per_client = 2;
  return ctx;
}

// Seed 001's pricing: $25.251286/h for 8 A100s; $63.296/h for 8 H100s, a 3g.40gb being half.
TEST(PriceTarget, SeedUnitPricesForAWholeA100AndAnH100Half) {
  TargetPrice a = PriceTarget(ParseTarget("a100-40gb").value(), {}).value();
  TargetPrice h = PriceTarget(ParseTarget("h100-80gb:3g.40gb").value(), {}).value();
  EXPECT_DOUBLE_EQ(a.usd_per_hour, 25.251286 / 8);
  EXPECT_DOUBLE_EQ(h.gpu_share, 0.5);
  EXPECT_DOUBLE_EQ(h.usd_per_hour, 63.296 / 16);
}

TEST(PriceTarget, NamedInstanceTypeIsPreferredWhenItCarriesTheGpu) {
  Target h = ParseTarget("h100-80gb:3g.40gb").value();
  TargetPrice p = PriceTarget(h, {}, "ml.p4d.24xlarge,ml.p5.4xlarge").value();
  EXPECT_EQ(p.instance_type, "ml.p5.4xlarge");
  EXPECT_EQ(p.gpus_per_instance, 1);
  EXPECT_EQ(PriceTarget(h, {}, "ml.nope").error().code, ErrorCode::kNotFound);
}

TEST(PriceTarget, ConfiguredPriceWins) {
  catalog::PriceOverrides prices{{"ml.p4d.24xlarge", 16.0}};
  TargetPrice a = PriceTarget(ParseTarget("a100-40gb").value(), prices).value();
  EXPECT_DOUBLE_EQ(a.usd_per_hour, 2.0);
  EXPECT_EQ(a.source, "configured");
}

TEST(CostPerMillionTokens, IsHourlyPriceOverTokensPerHour) {
  TargetPrice p;
  p.known = true;
  p.usd_per_hour = 3.6;
  EXPECT_DOUBLE_EQ(*CostPerMillionTokens(p, 1000), 1.0);  // 3.6 / 3.6M tokens x 1M.
  EXPECT_FALSE(CostPerMillionTokens(p, 0).has_value());
}

// perf-anchors.md 5: at equal precision the roofline predicts the H100 half about 8% faster in
// bandwidth-bound decode and up to ~31% lower TTFT on long prompts; the model must say so, and
// name bandwidth / compute as the drivers.
TEST(Compare, H100HalfAgainstWholeA100FollowsTheHardwareRatios) {
  auto targets = ParseTargets("a100-40gb,h100-80gb:3g.40gb").value();
  auto scenarios = ParseScenarios("D(2000,200)").value();
  Comparison cmp = Compare(Llama8b(), targets, scenarios, {1, 64}).value();
  const CompareRow& one = cmp.scenarios[0].rows[0];
  EXPECT_NEAR(one.itl_diff_pct[1], (1 / 1.0772 - 1) * 100, 1.5);  // 1675 / 1555 GB/s.
  EXPECT_NE(one.drivers[1].find("bandwidth"), std::string::npos);
  EXPECT_LT(one.ttft_diff_pct[1], -20);
  EXPECT_NE(one.ttft_drivers[1].find("compute"), std::string::npos);
  EXPECT_GT(one.tok_s_ratio[1], 1.0);
  // Cost: the A100 unit is cheaper at concurrency 1 ($3.16 vs $3.96 per hour for similar speed).
  EXPECT_EQ(one.cheapest, std::optional<size_t>(0));
}

TEST(Compare, CrossoverIsTheLowestConcurrencyFromWhichATargetStaysCheapest) {
  auto targets = ParseTargets("a100-40gb,h100-80gb:3g.40gb").value();
  auto scenarios = ParseScenarios("D(7800,200)").value();
  Comparison cmp = Compare(Llama8b(), targets, scenarios, {1, 2, 4, 8, 16, 32, 64}).value();
  const ScenarioComparison& s = cmp.scenarios[0];
  for (const Crossover& x : s.crossovers) {
    if (!x.cheaper_from) continue;
    for (const CompareRow& r : s.rows) {
      if (r.concurrency >= *x.cheaper_from) {
        EXPECT_EQ(r.cheapest, x.target) << r.concurrency;
      }
    }
  }
}

TEST(Compare, RefusesFp8OnAmpereNamingTheTarget) {
  PlanContext ctx = Llama8b();
  ctx.precision = {Dtype::kFp8, Dtype::kFp8};
  auto r = Compare(ctx, ParseTargets("a100-40gb,h100-80gb").value(),
                   ParseScenarios("D(100,100)").value(), {1});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("a100-40gb"), std::string::npos);
  EXPECT_NE(r.error().message.find("FP8"), std::string::npos);
}

TEST(ComparisonSvg, DrawsOneLinePerTargetInEachPanel) {
  auto targets = ParseTargets("a100-40gb,h100-80gb:3g.40gb").value();
  Comparison cmp =
      Compare(Llama8b(), targets, ParseScenarios("D(100,100)").value(), {2, 4, 8}).value();
  std::string svg = ComparisonSvg(cmp, 0);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  size_t lines = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 4u);  // 2 targets x (tok/s, cost).
  EXPECT_NE(svg.find("h100-80gb:3g.40gb"), std::string::npos);
}

}  // namespace
}  // namespace carve::planner
