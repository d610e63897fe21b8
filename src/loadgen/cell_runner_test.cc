#include "loadgen/cell_runner.h"

#include <gtest/gtest.h>

#include "loadgen/fake_target.h"

namespace carve::loadgen {
namespace {

using std::chrono::milliseconds;

CellPlan Plan(const char* scenario, int concurrency, std::optional<int64_t> requests,
              std::optional<milliseconds> duration = std::nullopt) {
  CellPlan p;
  p.scenario = ParseLoadScenario(scenario).value();
  p.concurrency = concurrency;
  p.requests = requests;
  p.duration = duration;
  p.seed = 5;
  return p;
}

TEST(RunCell, SendsExactlyTheRequestCountWithThatManyWorkers) {
  FakeTarget target(PacedAnswer, milliseconds(20));
  auto m = RunCell(target, Plan("D(200,50)", 4, 12));
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->requests, 12);
  EXPECT_EQ(target.requests().size(), 12u);
  EXPECT_EQ(target.max_in_flight(), 4);
  EXPECT_EQ(target.sessions(), 4);
  EXPECT_EQ(m->output_tokens, 12 * 50);
  for (const BenchRequest& r : target.requests()) {
    EXPECT_EQ(r.shape.input_tokens, 200);
    EXPECT_EQ(r.prompt.size(), 800u);
  }
  EXPECT_NEAR(*m->itl_p50_s, 0.001, 1e-12);
}

TEST(RunCell, SameSeedSendsTheSameRequestsWhateverTheConcurrency) {
  auto shapes = [](int concurrency) {
    FakeTarget target(PacedAnswer, milliseconds(1));
    EXPECT_TRUE(RunCell(target, Plan("N(480,240)/(300,150)", concurrency, 20)).has_value());
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const BenchRequest& r : target.requests()) {
      out.emplace_back(r.shape.input_tokens, r.shape.output_tokens);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(shapes(1), shapes(5));
}

TEST(RunCell, DurationStopsStartingRequests) {
  FakeTarget target(PacedAnswer, milliseconds(30));
  auto m = RunCell(target, Plan("D(10,10)", 2, std::nullopt, milliseconds(200)));
  ASSERT_TRUE(m.has_value());
  EXPECT_GE(m->requests, 2);
  EXPECT_LE(m->requests, 2 * (200 / 30 + 2));
  EXPECT_GE(m->wall_s, 0.2);
}

TEST(RunCell, CountsFailuresByKind) {
  FakeTarget target(
      [](const BenchRequest& r) {
        RequestOutcome o = PacedAnswer(r);
        static std::atomic<int> n{0};
        const int i = n++;
        if (i % 3 == 1) o.kind = OutcomeKind::kError;
        if (i % 3 == 2) o.kind = OutcomeKind::kDeadline;
        return o;
      },
      milliseconds(1));
  auto m = RunCell(target, Plan("D(10,10)", 1, 9));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->errors, 3);
  EXPECT_EQ(m->deadline_failures, 3);
  EXPECT_EQ(m->output_tokens, 30);
}

TEST(RunCell, RejectsPlansWithoutAStopCondition) {
  FakeTarget target(PacedAnswer, milliseconds(1));
  EXPECT_EQ(RunCell(target, Plan("D(10,10)", 1, std::nullopt)).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_FALSE(RunCell(target, Plan("D(10,10)", 0, 3)).has_value());
  EXPECT_FALSE(RunCell(target, Plan("D(10,10)", 1, 0)).has_value());
  EXPECT_TRUE(target.requests().empty());
}

}  // namespace
}  // namespace carve::loadgen
