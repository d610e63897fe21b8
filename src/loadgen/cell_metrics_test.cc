#include "loadgen/cell_metrics.h"

#include <gtest/gtest.h>

namespace carve::loadgen {
namespace {

TEST(Percentile, InterpolatesBetweenClosestRanks) {
  std::vector<double> v{4, 1, 3, 2, 5};  // sorted: 1 2 3 4 5
  EXPECT_DOUBLE_EQ(*Percentile(v, 0.5), 3);
  EXPECT_DOUBLE_EQ(*Percentile(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(*Percentile(v, 1.0), 5);
  EXPECT_DOUBLE_EQ(*Percentile(v, 0.9), 4.6);   // rank 3.6
  EXPECT_DOUBLE_EQ(*Percentile(v, 0.99), 4.96);  // rank 3.96
}

TEST(Percentile, MatchesNumpyOnAHundredValues) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_NEAR(*Percentile(v, 0.5), 50.5, 1e-12);
  EXPECT_NEAR(*Percentile(v, 0.9), 90.1, 1e-12);
  EXPECT_NEAR(*Percentile(v, 0.99), 99.01, 1e-12);
}

TEST(Percentile, OfNothingIsEmptyAndOfOneIsIt) {
  EXPECT_FALSE(Percentile({}, 0.5).has_value());
  EXPECT_DOUBLE_EQ(*Percentile({7}, 0.99), 7);
}

RequestOutcome Ok(double ttft, double e2e, int64_t tokens) {
  RequestOutcome o;
  o.ttft_s = ttft;
  o.e2e_s = e2e;
  o.output_tokens = tokens;
  return o;
}

TEST(Summarise, UsesGenaiBenchDefinitions) {
  // Two requests of 11 tokens: ITL = (e2e - ttft) / 10.
  CellMetrics m = Summarise({Ok(0.1, 1.1, 11), Ok(0.3, 2.3, 11)}, 2.0);
  EXPECT_EQ(m.requests, 2);
  EXPECT_EQ(m.output_tokens, 22);
  EXPECT_DOUBLE_EQ(m.output_tok_s, 11);
  EXPECT_DOUBLE_EQ(m.requests_per_s, 1);
  EXPECT_DOUBLE_EQ(*m.ttft_p50_s, 0.2);
  EXPECT_DOUBLE_EQ(*m.itl_p50_s, 0.15);  // 0.1 and 0.2
  EXPECT_DOUBLE_EQ(*m.e2e_p50_s, 1.7);
}

TEST(Summarise, CountsDeadlineFailuresApartFromErrors) {
  RequestOutcome err = Ok(-1, 0.5, 0);
  err.kind = OutcomeKind::kError;
  err.error = "HTTP 500";
  RequestOutcome late = Ok(0.2, 9, 3);
  late.kind = OutcomeKind::kDeadline;
  CellMetrics m = Summarise({Ok(0.1, 1, 5), err, late, Ok(0.1, 1, 5)}, 1.0);
  EXPECT_EQ(m.requests, 4);
  EXPECT_EQ(m.errors, 1);
  EXPECT_EQ(m.deadline_failures, 1);
  EXPECT_DOUBLE_EQ(m.error_rate(), 0.5);
  EXPECT_EQ(m.output_tokens, 10);  // failed requests' tokens are not throughput
  EXPECT_DOUBLE_EQ(*m.e2e_p99_s, 1);
  EXPECT_EQ(m.first_error, "HTTP 500");
}

TEST(Summarise, LeavesLatenciesEmptyWithoutSuccess) {
  RequestOutcome err;
  err.kind = OutcomeKind::kError;
  CellMetrics m = Summarise({err}, 1.0);
  EXPECT_FALSE(m.ttft_p50_s.has_value());
  EXPECT_FALSE(m.itl_p50_s.has_value());
  EXPECT_DOUBLE_EQ(m.output_tok_s, 0);
}

}  // namespace
}  // namespace carve::loadgen
