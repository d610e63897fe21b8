#include "planner/perf_model.h"

#include <gtest/gtest.h>

#include "planner/model_catalog.h"
#include "planner/serving_sim.h"

namespace carve::planner {
namespace {

ModelSpec Llama8b() { return FindModel("llama-3.1-8b").value(); }

// A made-up target with round figures so the expected times are easy to check by hand.
Hardware RoundHardware() {
  Hardware h;
  h.sms = 100;
  h.peak_flops = 400e12;
  h.bandwidth_bytes_s = 2e12;
  h.memory_bytes = 80'000'000'000;
  return h;
}

PerfModel Make(Hardware h, EfficiencyFactors f = {}) {
  return PerfModel::Create(Llama8b(), {}, h, f).value();
}

// One sequence at a short context: the step reads the weights once, plus 100 tokens of KV.
// time = (16,060,522,496 + 100 x 131,072) / (2e12 x 0.65).
TEST(PerfModel, SingleSequenceDecodeIsWeightsOverBandwidthWithinTheEfficiencyFactor) {
  PerfModel m = Make(RoundHardware(), EfficiencyFactors{0.5, 0.65, ""});
  StepTime s = m.DecodeStep(1, 100);
  EXPECT_EQ(s.binding, Resource::kBandwidth);
  EXPECT_DOUBLE_EQ(s.seconds, (16'060'522'496.0 + 100 * 131072.0) / (2e12 * 0.65));
  // And within 0.1% of the weights-only floor divided by the factor.
  EXPECT_NEAR(s.seconds / (16'060'522'496.0 / (2e12 * 0.65)), 1.0, 1e-3);
}

// Prefill of 2000 tokens is compute-bound: time = PrefillFlops / (400e12 x 0.5).
TEST(PerfModel, PrefillTimeIsFlopsOverAttainableCompute) {
  PerfModel m = Make(RoundHardware(), EfficiencyFactors{0.5, 0.65, ""});
  StepTime s = m.Prefill(2000);
  EXPECT_EQ(s.binding, Resource::kCompute);
  EXPECT_DOUBLE_EQ(s.seconds, PrefillFlops(Llama8b(), 2000) / (400e12 * 0.5));
  // A known FLOP count: 2 x 6,979,588,096 x 2000 + 2 x 131,072 x 2000^2 + 2 x 525,336,576.
  EXPECT_DOUBLE_EQ(PrefillFlops(Llama8b(), 2000),
                   2.0 * 6'979'588'096 * 2000 + 2.0 * 131072 * 4e6 + 2.0 * 525'336'576);
}

TEST(PerfModel, LargeBatchDecodeBecomesComputeBound) {
  PerfModel m = Make(RoundHardware());
  EXPECT_EQ(m.DecodeStep(1, 1000).binding, Resource::kBandwidth);
  EXPECT_EQ(m.DecodeStep(4096, 4096 * 10).binding, Resource::kCompute);
}

TEST(PerfModel, KvCapacityIsFreeMemoryOverKvBytesPerToken) {
  PerfModel m = Make(RoundHardware());
  EXPECT_EQ(m.KvCapacityTokens(),
            (80'000'000'000 - 16'060'522'496 - 1'500'000'000) / 131072);
}

TEST(PerfModel, RefusesATargetTheWeightsDoNotFit) {
  Hardware h = RoundHardware();
  h.memory_bytes = 10'000'000'000;
  auto m = PerfModel::Create(Llama8b(), {}, h, {});
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(m.error().message.find("16.06 GB"), std::string::npos);
}

TEST(PerfModel, RejectsFactorsOutsideZeroToOne) {
  auto m = PerfModel::Create(Llama8b(), {}, RoundHardware(), EfficiencyFactors{1.5, 0.5, ""});
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find("compute=1.5"), std::string::npos);
}

// Monotonicity over catalog rows: for every catalog target the model can price, compare it with
// the same target given more SMs (prefill never slower) or more bandwidth (decode never slower).
TEST(PerfModelProperty, MoreSmsNeverSlowPrefillOnAnyCatalogTarget) {
  int checked = 0;
  for (const Target& t : EnumerateTargets({})) {
    auto hw = HardwareFor(t, {});
    if (!hw) continue;
    auto base = PerfModel::Create(Llama8b(), {}, *hw, {});
    if (!base) continue;
    Hardware more = *hw;
    more.sms += 8;
    more.peak_flops = hw->peak_flops * more.sms / hw->sms;
    PerfModel bigger = PerfModel::Create(Llama8b(), {}, more, {}).value();
    for (int64_t tokens : {1, 100, 2000, 8000}) {
      EXPECT_LE(bigger.Prefill(tokens).seconds, base->Prefill(tokens).seconds) << t.Name();
    }
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

TEST(PerfModelProperty, MoreBandwidthNeverSlowsDecodeOnAnyCatalogTarget) {
  int checked = 0;
  for (const Target& t : EnumerateTargets({})) {
    auto hw = HardwareFor(t, {});
    if (!hw) continue;
    auto base = PerfModel::Create(Llama8b(), {}, *hw, {});
    if (!base) continue;
    Hardware more = *hw;
    more.bandwidth_bytes_s *= 1.25;
    PerfModel bigger = PerfModel::Create(Llama8b(), {}, more, {}).value();
    for (int64_t batch : {1, 16, 256}) {
      EXPECT_LE(bigger.DecodeStep(batch, batch * 2000).seconds,
                base->DecodeStep(batch, batch * 2000).seconds)
          << t.Name();
    }
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

// Across the catalog targets that hold the model, TTFT never falls as concurrency rises.
TEST(PerfModelProperty, MoreConcurrencyNeverLowersTtft) {
  Scenario sc = ParseScenario("D(2000,200)").value();
  int checked = 0;
  for (const Target& t : EnumerateTargets({})) {
    auto hw = HardwareFor(t, {});
    if (!hw) continue;
    auto m = PerfModel::Create(Llama8b(), {}, *hw, {});
    if (!m) continue;
    double previous = 0;
    for (int c : {1, 2, 4, 8, 16, 32, 64, 128}) {
      CellResult cell = SimulateCell(*m, sc, c, SimOptions{60, 2});
      EXPECT_GE(cell.ttft_p50_s, previous * 0.999) << t.Name() << " c=" << c;
      previous = cell.ttft_p50_s;
    }
    ++checked;
  }
  EXPECT_GT(checked, 5);
}

}  // namespace
}  // namespace carve::planner
