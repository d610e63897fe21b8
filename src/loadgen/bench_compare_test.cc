#include "loadgen/bench_compare.h"

#include <gtest/gtest.h>

namespace carve::loadgen {
namespace {

BenchRun RunWithCosts(const std::string& name, const std::vector<double>& costs,
                      const std::vector<int>& ladder, double tok_s = 100) {
  BenchRun run;
  run.name = name;
  for (size_t i = 0; i < ladder.size(); ++i) {
    BenchCellResult c;
    c.scenario = "D(100,100)";
    c.concurrency = ladder[i];
    c.metrics.output_tok_s = tok_s * ladder[i];
    c.metrics.ttft_p50_s = 0.1;
    if (costs[i] > 0) c.usd_per_million_tokens = costs[i];
    run.cells.push_back(c);
  }
  return run;
}

TEST(CompareRuns, CrossoverIsWhereBStaysCheaperToTheTop) {
  BenchRun a = RunWithCosts("A", {1.0, 0.8, 0.5}, {2, 4, 8});
  BenchRun b = RunWithCosts("B", {1.2, 0.7, 0.4}, {2, 4, 8}, 150);
  BenchComparison cmp = CompareRuns(a, b);
  ASSERT_EQ(cmp.cells.size(), 3u);
  EXPECT_NEAR(*cmp.cells[0].tok_s_pct, 50, 1e-9);
  EXPECT_NEAR(*cmp.cells[2].cost_pct, -20, 1e-9);
  ASSERT_EQ(cmp.crossovers.size(), 1u);
  EXPECT_EQ(cmp.crossovers[0].b_cheaper_from, 4);
  EXPECT_NE(FormatComparison(cmp).find("B is cheaper from concurrency 4"), std::string::npos);
}

TEST(CompareRuns, NoCrossoverWhenBIsDearerAtTheTop) {
  BenchRun a = RunWithCosts("A", {1.0, 0.8, 0.5}, {2, 4, 8});
  BenchRun b = RunWithCosts("B", {0.9, 0.7, 0.6}, {2, 4, 8});
  BenchComparison cmp = CompareRuns(a, b);
  EXPECT_FALSE(cmp.crossovers[0].b_cheaper_from.has_value());
  EXPECT_NE(FormatComparison(cmp).find("none"), std::string::npos);
}

TEST(CompareRuns, CheaperEverywhereCrossesAtTheBottom) {
  BenchComparison cmp =
      CompareRuns(RunWithCosts("A", {2, 2}, {1, 2}), RunWithCosts("B", {1, 1}, {1, 2}));
  EXPECT_EQ(cmp.crossovers[0].b_cheaper_from, 1);
}

TEST(CompareRuns, OnlySharedCellsAreCompared) {
  BenchComparison cmp =
      CompareRuns(RunWithCosts("A", {1, 1, 1}, {1, 2, 4}), RunWithCosts("B", {2, 0.5}, {2, 8}));
  ASSERT_EQ(cmp.cells.size(), 1u);
  EXPECT_EQ(cmp.cells[0].concurrency, 2);
  EXPECT_FALSE(cmp.crossovers[0].b_cheaper_from.has_value());
}

TEST(CompareRuns, UnpricedRunsHaveNoCrossover) {
  BenchComparison cmp =
      CompareRuns(RunWithCosts("A", {0, 0}, {1, 2}), RunWithCosts("B", {1, 1}, {1, 2}));
  EXPECT_FALSE(cmp.crossovers[0].priced);
  EXPECT_NE(FormatComparison(cmp).find("unknown"), std::string::npos);
}

// The comparison keeps what it shows: formatting it after the runs are gone is safe (it read
// freed memory when it held pointers into the runs; ASan caught it).
TEST(CompareRuns, AComparisonOutlivesItsRuns) {
  BenchComparison cmp;
  {
    BenchRun a = RunWithCosts("A", {1.0, 0.8}, {2, 4});
    BenchRun b = RunWithCosts("B", {1.2, 0.7}, {2, 4});
    cmp = CompareRuns(a, b);
  }
  EXPECT_NE(FormatComparison(cmp).find("0.7000"), std::string::npos) << FormatComparison(cmp);
}

}  // namespace
}  // namespace carve::loadgen
