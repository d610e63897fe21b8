#include "loadgen/bench_cost.h"

#include <gtest/gtest.h>

namespace carve::loadgen {
namespace {

TEST(PriceBenchTarget, HalfGpuPartitionOnP5IsOneSixteenthOfTheInstance) {
  auto p = PriceBenchTarget({"ml.p5.48xlarge", "mig-3g.40gb", 0, std::nullopt, {}});
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_DOUBLE_EQ(p->price.gpu_share, 0.5);
  EXPECT_DOUBLE_EQ(p->instance_share, 1.0 / 16);
  ASSERT_TRUE(p->price.known);
  EXPECT_DOUBLE_EQ(p->price.usd_per_hour, p->price.instance_usd_per_hour / 16);
  EXPECT_EQ(p->target, "h100-80gb:3g.40gb");
}

TEST(PriceBenchTarget, WholeGpusAreTheirCountOverTheInstancesGpus) {
  auto p = PriceBenchTarget({"ml.p4d.24xlarge", "", 2, std::nullopt, {}});
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_DOUBLE_EQ(p->instance_share, 0.25);
  EXPECT_DOUBLE_EQ(p->price.usd_per_hour, p->price.instance_usd_per_hour / 4);
  EXPECT_EQ(p->target, "a100-40gb");
}

TEST(PriceBenchTarget, ConfiguredInstancePriceIsUsed) {
  catalog::PriceOverrides overrides{{"ml.p5.48xlarge", 160.0}};
  auto p = PriceBenchTarget({"ml.p5.48xlarge", "3g.40gb", 0, std::nullopt, overrides});
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(p->price.usd_per_hour, 10.0);
  EXPECT_EQ(p->price.source, "configured");
}

TEST(PriceBenchTarget, ExplicitPricePerHourOverridesTheCatalog) {
  auto p = PriceBenchTarget({"ml.p5.48xlarge", "mig-3g.40gb", 0, 3.6, {}});
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(p->price.usd_per_hour, 3.6);
  EXPECT_DOUBLE_EQ(p->instance_share, 1.0 / 16);
  // 3.6 $/h at 1000 tok/s: 3.6 / 3.6e6 tokens x 1e6 = $1 per million.
  EXPECT_DOUBLE_EQ(*CostPerMillionOutputTokens(*p, 1000), 1.0);
  EXPECT_FALSE(CostPerMillionOutputTokens(*p, 0).has_value());
}

TEST(PriceBenchTarget, NothingGivenIsUnpriced) {
  auto p = PriceBenchTarget({});
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(p->price.known);
  EXPECT_FALSE(CostPerMillionOutputTokens(*p, 1000).has_value());
}

TEST(PriceBenchTarget, RejectsInconsistentOptionsNamingThem) {
  auto no_instance = PriceBenchTarget({"", "mig-3g.40gb", 0, std::nullopt, {}});
  ASSERT_FALSE(no_instance.has_value());
  EXPECT_NE(no_instance.error().message.find("--instance-type"), std::string::npos);
  auto bad_profile = PriceBenchTarget({"ml.p5.48xlarge", "mig-5g.99gb", 0, std::nullopt, {}});
  ASSERT_FALSE(bad_profile.has_value());
  EXPECT_EQ(bad_profile.error().code, ErrorCode::kNotFound);
  auto too_many = PriceBenchTarget({"ml.p4d.24xlarge", "", 9, std::nullopt, {}});
  ASSERT_FALSE(too_many.has_value());
  EXPECT_NE(too_many.error().message.find("--gpus 9"), std::string::npos);
  EXPECT_FALSE(PriceBenchTarget({"ml.nope", "", 0, std::nullopt, {}}).has_value());
  EXPECT_FALSE(PriceBenchTarget({"", "", 0, -1.0, {}}).has_value());
}

}  // namespace
}  // namespace carve::loadgen
