#include "planner/serving_sim.h"

#include <gtest/gtest.h>

#include "planner/model_catalog.h"

namespace carve::planner {
namespace {

// 20 GB of memory: 16.06 GB weights + 1.5 GB overhead leave 2.44 GB = 18,610 tokens of KV, so a
// D(2000,200) batch holds 8 sequences.
PerfModel SmallModel() {
  Hardware h;
  h.sms = 100;
  h.peak_flops = 400e12;
  h.bandwidth_bytes_s = 2e12;
  h.memory_bytes = 20'000'000'000;
  return PerfModel::Create(FindModel("llama-3.1-8b").value(), {}, h, {}).value();
}

TEST(SimulateCell, KvCapacityCapsTheBatchAndTheExcessQueues) {
  PerfModel m = SmallModel();
  Scenario sc = ParseScenario("D(2000,200)").value();
  CellResult under = SimulateCell(m, sc, 8);
  CellResult over = SimulateCell(m, sc, 32);
  EXPECT_EQ(under.batch_limit, 8);
  EXPECT_FALSE(under.kv_limited);
  EXPECT_EQ(over.batch_limit, 8);
  EXPECT_TRUE(over.kv_limited);
  EXPECT_EQ(over.binding, Resource::kKvCapacity);
  // Queued requests wait about three batches' worth of service before their first token.
  EXPECT_GT(over.ttft_p50_s, 2 * under.e2e_p50_s);
  // Throughput saturates: four times the clients, no more tokens.
  EXPECT_NEAR(over.output_tok_s / under.output_tok_s, 1.0, 0.1);
}

TEST(SimulateCell, CountsRequestsOverTheDeadline) {
  PerfModel m = SmallModel();
  Scenario sc = ParseScenario("D(2000,200)").value();
  CellResult loose = SimulateCell(m, sc, 32, SimOptions{1000, 4});
  CellResult tight = SimulateCell(m, sc, 32, SimOptions{loose.e2e_p50_s * 0.5, 4});
  EXPECT_EQ(loose.deadline_miss_fraction, 0);
  EXPECT_GT(tight.deadline_miss_fraction, 0.5);
}

TEST(SimulateCell, ARequestLargerThanTheKvPoolIsNeverServed) {
  PerfModel m = SmallModel();
  CellResult c = SimulateCell(m, ParseScenario("D(20000,200)").value(), 4);
  EXPECT_EQ(c.batch_limit, 0);
  EXPECT_EQ(c.binding, Resource::kKvCapacity);
  EXPECT_EQ(c.deadline_miss_fraction, 1);
  EXPECT_EQ(c.output_tok_s, 0);
}

// One client, short prompt: E2E = TTFT + (out - 1) x ITL, and ITL is one decode step.
TEST(SimulateCell, SingleClientLatenciesAddUp) {
  PerfModel m = SmallModel();
  CellResult c = SimulateCell(m, ParseScenario("D(100,50)").value(), 1);
  EXPECT_NEAR(c.e2e_p50_s, c.ttft_p50_s + 49 * c.itl_p50_s, 1e-9);
  EXPECT_NEAR(c.itl_p50_s, m.DecodeStep(1, 125).seconds, 0.02 * c.itl_p50_s);
  EXPECT_NEAR(c.ttft_p50_s, m.Prefill(100).seconds, 1e-9);
  EXPECT_NEAR(c.output_tok_s, 50 / c.e2e_p50_s, 1e-6);
}

}  // namespace
}  // namespace carve::planner
