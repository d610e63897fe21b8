#include "testmodel/engine.h"

#include <gtest/gtest.h>

#include "testmodel/server.h"

namespace carve::testmodel {
namespace {

using std::chrono::nanoseconds;

planner::PerfModel Llama8bOnH100Half() {
  TestmodelOptions o;
  o.model = "llama-3.1-8b";
  o.target = "h100-80gb:3g.40gb";
  auto m = PacingModel(o);
  EXPECT_TRUE(m.has_value()) << m.error().message;
  return std::move(m).value();
}

struct Recorder {
  std::vector<nanoseconds> steps;
  Sleeper sleeper() {
    return [this](nanoseconds d) { steps.push_back(d); };
  }
};

double Seconds(nanoseconds d) { return static_cast<double>(d.count()) / 1e9; }

std::unique_ptr<Engine> MakeEngine(Recorder& rec, double speed = 1.0) {
  auto e = Engine::Create(Llama8bOnH100Half(), {speed}, rec.sleeper());
  EXPECT_TRUE(e.has_value());
  return std::move(e).value();
}

// A lone request: its first step is the prompt's prefill, then one decode step per token.
TEST(Engine, PacesALoneRequestByPrefillThenDecodeSteps) {
  Recorder rec;
  auto engine = MakeEngine(rec);
  const auto& model = engine->model();
  auto seq = engine->Submit(128, 4).value();
  for (int i = 0; i < 4; ++i) engine->StepOnce();
  ASSERT_EQ(rec.steps.size(), 4u);
  EXPECT_NEAR(Seconds(rec.steps[0]), model.Prefill(128).seconds, 1e-6);
  for (int i = 1; i < 4; ++i) {
    EXPECT_NEAR(Seconds(rec.steps[i]), model.DecodeStep(1, 128 + i).seconds, 1e-6) << i;
  }
  EXPECT_TRUE(seq->Current().finished);
  EXPECT_EQ(seq->Current().generated, 4);
  EXPECT_EQ(engine->StepOnce(), nanoseconds(0));
}

// Eight concurrent requests share every step: 1 prefill + 9 decode steps give 80 tokens.
TEST(Engine, ConcurrentRequestsShareDecodeSteps) {
  Recorder rec;
  auto engine = MakeEngine(rec);
  std::vector<std::shared_ptr<Sequence>> seqs;
  for (int i = 0; i < 8; ++i) seqs.push_back(engine->Submit(16, 10).value());
  while (engine->StepOnce() != nanoseconds(0)) {
  }
  EXPECT_EQ(rec.steps.size(), 10u);
  EXPECT_EQ(engine->Stats().tokens_generated, 80);
  for (const auto& s : seqs) EXPECT_TRUE(s->Current().finished);
  // A decode step of 8 costs barely more than one of 1 (bandwidth-bound on the weights).
  const auto& model = engine->model();
  EXPECT_LT(Seconds(rec.steps[1]), 1.2 * model.DecodeStep(1, 17).seconds);
}

// A request waits while the KV cache cannot hold its prompt and output beside the running one.
TEST(Engine, KvCapacityLimitsTheBatch) {
  Recorder rec;
  auto engine = MakeEngine(rec);
  const int64_t cap = engine->model().KvCapacityTokens();
  const int64_t half = cap / 2 + 1;
  auto first = engine->Submit(half - 2, 2).value();
  auto second = engine->Submit(half - 2, 2).value();
  engine->StepOnce();
  EXPECT_EQ(engine->Stats().running, 1);
  EXPECT_EQ(engine->Stats().waiting, 1);
  while (engine->StepOnce() != nanoseconds(0)) {
  }
  EXPECT_TRUE(first->Current().finished);
  EXPECT_TRUE(second->Current().finished);
  EXPECT_EQ(engine->Stats().kv_reserved_tokens, 0);
}

TEST(Engine, RejectsARequestLargerThanTheWholeKvCache) {
  Recorder rec;
  auto engine = MakeEngine(rec);
  auto r = engine->Submit(engine->model().KvCapacityTokens(), 1);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("KV cache holds"), std::string::npos);
  EXPECT_EQ(engine->Stats().waiting, 0);
}

TEST(Engine, SpeedDividesStepTime) {
  Recorder slow_rec, fast_rec;
  auto slow = MakeEngine(slow_rec, 1.0);
  auto fast = MakeEngine(fast_rec, 10.0);
  (void)slow->Submit(64, 2).value();
  (void)fast->Submit(64, 2).value();
  slow->StepOnce();
  fast->StepOnce();
  EXPECT_NEAR(Seconds(fast_rec.steps[0]) * 10, Seconds(slow_rec.steps[0]), 1e-6);
}

TEST(Engine, RejectsNonPositiveSpeed) {
  auto e = Engine::Create(Llama8bOnH100Half(), {0.0}, [](nanoseconds) {});
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message.find("speed"), std::string::npos);
}

TEST(Engine, CancelledRequestFreesItsKvReservation) {
  Recorder rec;
  auto engine = MakeEngine(rec);
  auto seq = engine->Submit(32, 100).value();
  engine->StepOnce();
  EXPECT_GT(engine->Stats().kv_reserved_tokens, 0);
  seq->Cancel();
  EXPECT_EQ(engine->StepOnce(), nanoseconds(0));
  EXPECT_EQ(engine->Stats().kv_reserved_tokens, 0);
  EXPECT_EQ(seq->Current().generated, 1);
}

TEST(Engine, ThreadServesSubmittedRequests) {
  auto e = Engine::Create(Llama8bOnH100Half(), {1000.0},
                          [](nanoseconds d) { std::this_thread::sleep_for(d); });
  ASSERT_TRUE(e.has_value());
  (*e)->Start();
  auto seq = (*e)->Submit(10, 5).value();
  auto p = seq->WaitFinished(std::chrono::seconds(10));
  EXPECT_TRUE(p.finished);
  EXPECT_EQ(p.generated, 5);
  (*e)->Stop();
}

}  // namespace
}  // namespace carve::testmodel
