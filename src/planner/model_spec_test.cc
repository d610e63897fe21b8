#include "planner/model_spec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "planner/model_catalog.h"
#include "planner/model_yaml.h"

namespace carve::planner {
namespace {

ModelSpec Llama8b() { return FindModel("llama-3.1-8b").value(); }

// 8,030,261,248 params x 2 bytes, by hand.
TEST(WeightBytes, Llama31_8bInBf16IsTwoBytesPerParam) {
  EXPECT_EQ(WeightBytes(Llama8b(), Dtype::kBf16), 16'060'522'496);
  EXPECT_EQ(WeightBytes(Llama8b(), Dtype::kFp8), 8'030'261'248);
}

// Seed 001: "the weights, which for an 8B model at FP16 are about 16 GB".
TEST(WeightBytes, SeedFactAn8bModelInFp16IsAbout16Gb) {
  double gb = static_cast<double>(WeightBytes(Llama8b(), ParseDtype("fp16").value())) / 1e9;
  EXPECT_NEAR(gb, 16.0, 0.5);
}

// 2 (K,V) x 32 layers x 8 KV heads x 128 head dim x 2 bytes = 131,072 = 128 KiB.
TEST(KvBytesPerToken, Llama31_8bIs128KibInBf16And64KibInFp8) {
  EXPECT_EQ(KvBytesPerToken(Llama8b(), Dtype::kBf16), 128 * 1024);
  EXPECT_EQ(KvBytesPerToken(Llama8b(), Dtype::kFp8), 64 * 1024);
}

// 2 x 80 x 8 x 128 x 2 = 327,680 bytes.
TEST(KvBytesPerToken, Llama31_70bIs320Kib) {
  EXPECT_EQ(KvBytesPerToken(FindModel("llama-3.1-70b").value(), Dtype::kBf16), 320 * 1024);
}

TEST(KvBytesPerToken, EncodersKeepNoKvCache) {
  EXPECT_EQ(KvBytesPerToken(FindModel("bge-large-en-v1.5").value(), Dtype::kBf16), 0);
}

// Property over every row: the listed count agrees with the architecture within 2%, so a
// mistyped layer count, width or vocabulary fails here.
TEST(ModelCatalog, EveryRowsParamCountMatchesItsArchitecture) {
  for (const ModelSpec& m : AllModels()) {
    int64_t est = EstimateParams(m);
    ASSERT_GT(est, 0) << m.id;
    EXPECT_NEAR(static_cast<double>(est) / static_cast<double>(m.params), 1.0, 0.02) << m.id;
  }
}

TEST(ModelCatalog, EveryRowValidatesAndIdsAreUniqueAndFindable) {
  std::set<std::string> ids;
  for (const ModelSpec& m : AllModels()) {
    EXPECT_TRUE(ValidateModel(m).ok()) << m.id;
    EXPECT_TRUE(ids.insert(m.id).second) << m.id;
    EXPECT_EQ(FindModel(m.id).value().id, m.id);
    EXPECT_EQ(FindModel(m.display_name).value().id, m.id);
    EXPECT_FALSE(m.source.empty()) << m.id;
  }
}

TEST(FindModel, AcceptsHuggingFaceNames) {
  EXPECT_EQ(FindModel("meta-llama/Llama-3.1-8B-Instruct").value().id, "llama-3.1-8b");
  EXPECT_EQ(FindModel("mistralai/Mistral-7B-Instruct-v0.3").value().id, "mistral-7b");
}

TEST(FindModel, NotFoundListsTheCatalog) {
  auto r = FindModel("gpt-5");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("llama-3.1-8b"), std::string::npos);
}

// Prefill FLOPs for a 1000-token prompt, by hand from the formula's terms:
// 2 x (8,030,261,248 - 2 x 128,256 x 4096) x 1000 + 2 x (32 x 32 x 128) x 1000^2
// + 2 x 128,256 x 4096.
TEST(PrefillFlops, Llama31_8bThousandTokensByHand) {
  double layer = 8'030'261'248.0 - 2.0 * 128256 * 4096;
  double expected = 2 * layer * 1000 + 2.0 * 32 * 32 * 128 * 1e6 + 2.0 * 128256 * 4096;
  EXPECT_DOUBLE_EQ(PrefillFlops(Llama8b(), 1000), expected);
}

TEST(ModelYaml, DescribesACustomModelAndEstimatesParams) {
  auto m = ParseModelYaml(
      "id: tiny\nlayers: 2\nhidden: 64\nheads: 4\nkv_heads: 2\nffn: 128\nvocab: 1000\n"
      "default_context: 2048\n");
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->head_dim, 16);
  // tables 2 x 1000 x 64 + 2 x (2 x 64 x 64 + 2 x 64 x 32 + 3 x 64 x 128)
  EXPECT_EQ(m->params, 128000 + 2 * (8192 + 4096 + 24576));
  EXPECT_EQ(KvBytesPerToken(*m, Dtype::kBf16), 2 * 2 * 2 * 16 * 2);
}

TEST(ModelYaml, OverridesABaseRow) {
  auto m = ParseModelYaml("id: llama-long\nbase: llama-3.1-8b\ndefault_context: 4096\n");
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->params, 8'030'261'248);
  EXPECT_EQ(m->default_context, 4096);
}

TEST(ModelYaml, RejectsABadFieldNamingIt) {
  auto m = ParseModelYaml("id: x\nlayers: many\n");
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find("layers"), std::string::npos);
  auto z = ParseModelYaml("id: x\nlayers: 2\nhidden: 64\nheads: 4\nkv_heads: 3\nffn: 8\n"
                          "vocab: 10\ndefault_context: 8\n");
  ASSERT_FALSE(z.has_value());
  EXPECT_NE(z.error().message.find("kv_heads=3"), std::string::npos);
}

}  // namespace
}  // namespace carve::planner
