#include "planner/memory_fit.h"

#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "planner/model_catalog.h"

namespace carve::planner {
namespace {

ModelSpec Llama8b() { return FindModel("llama-3.1-8b").value(); }
Target T(std::string_view name) { return ParseTarget(name).value(); }

// KV = 131,072 B x 8000 tokens x 16 sequences = 16,777,216,000 B.
TEST(FitInMemory, BreaksMemoryIntoWeightsKvAndOverhead) {
  FitRequest req{{}, 8000, 16, kDefaultOverheadBytes};
  FitResult r = FitInMemory(Llama8b(), req, 40'000'000'000);
  EXPECT_EQ(r.weight_bytes, 16'060'522'496);
  EXPECT_EQ(r.kv_bytes, 16'777'216'000);
  EXPECT_EQ(r.overhead_bytes, 1'500'000'000);
  EXPECT_EQ(r.headroom_bytes, 40'000'000'000 - 16'060'522'496 - 16'777'216'000 - 1'500'000'000);
  EXPECT_TRUE(r.fits);
}

// Seed 001: "that same 8B model at FP16 comfortably serves an 8,000-token context on a 40 GB
// partition". Comfortably: with more than a quarter of the partition to spare, on both 40 GB
// units the seed compares (H100 3g.40gb and a whole A100-40GB).
TEST(FitOnTarget, SeedFactLlama8bServes8000TokensOnA40GbPartition) {
  FitRequest req{{}, 8000, 1, kDefaultOverheadBytes};
  for (const char* t : {"h100-80gb:3g.40gb", "a100-40gb"}) {
    auto r = FitOnTarget(Llama8b(), req, T(t));
    ASSERT_TRUE(r.has_value()) << t;
    EXPECT_TRUE(r->fits) << t;
    EXPECT_GT(static_cast<double>(r->headroom_bytes) / static_cast<double>(r->memory_bytes), 0.25)
        << t;
    EXPECT_GE(r->max_context, 8000 * 10) << t;
  }
}

// A 20 GB partition loads the 16 GB of weights but not the KV of 16 x 8000 tokens.
TEST(FitOnTarget, WarnsInTheSeedsWordsWhenWeightsFitButKvDoesNot) {
  auto r = FitOnTarget(Llama8b(), FitRequest{{}, 8000, 16, kDefaultOverheadBytes},
                       T("a100-40gb:4g.20gb"));
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->fits);
  EXPECT_TRUE(r->weights_fit);
  EXPECT_NE(r->warning.find("load the model and then fail under load"), std::string::npos);
  // The largest context at 16 sequences is what the free memory holds, rounded down.
  int64_t free = r->memory_bytes - r->weight_bytes - r->overhead_bytes;
  EXPECT_EQ(r->max_context, free / (131072 * 16));
  EXPECT_EQ(r->max_concurrency, free / (131072 * 8000));
}

TEST(FitOnTarget, NoWarningWhenEvenTheWeightsDoNotFit) {
  auto r = FitOnTarget(Llama8b(), FitRequest{{}, 8000, 1, kDefaultOverheadBytes},
                       T("a100-40gb:1g.5gb"));
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->fits);
  EXPECT_FALSE(r->weights_fit);
  EXPECT_TRUE(r->warning.empty());
  EXPECT_EQ(r->max_context, 0);
}

TEST(FitOnTarget, RejectsFp8OnAGpuWithoutFp8) {
  auto r = FitOnTarget(Llama8b(), FitRequest{{Dtype::kFp8, Dtype::kFp8}, 8000, 1,
                                             kDefaultOverheadBytes},
                       T("a100-40gb"));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("FP8"), std::string::npos);
}

// Property over every catalog target: a larger context or concurrency never turns a misfit
// into a fit, and max_context at the requested concurrency always fits.
TEST(FitOnTarget, LargestContextAlwaysFitsOnEveryTarget) {
  for (const Target& t : EnumerateTargets({})) {
    FitRequest req{{}, 4096, 4, kDefaultOverheadBytes};
    FitResult r = FitOnTarget(Llama8b(), req, t).value();
    if (!r.weights_fit) continue;
    FitRequest at_max = req;
    at_max.context_tokens = r.max_context;
    EXPECT_TRUE(FitOnTarget(Llama8b(), at_max, t).value().fits) << t.Name();
    at_max.context_tokens = r.max_context + 1;
    EXPECT_FALSE(FitOnTarget(Llama8b(), at_max, t).value().fits) << t.Name();
  }
}

}  // namespace
}  // namespace carve::planner
