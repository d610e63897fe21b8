#include "core/layout_validator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/layout_search.h"
#include "core/layout_test_gpus.h"

namespace carve::core {
namespace {

using test_gpus::kA100;
using test_gpus::kH100;
using test_gpus::kNoMig;
using test_gpus::kRtxPro6000;
using test_gpus::kUnplaced;
using ::testing::HasSubstr;
using ::testing::Not;

using Names = std::vector<std::string>;

catalog::DriverVersion Driver(const char* text) {
  return catalog::DriverVersion::Parse(text).value();
}

catalog::InstanceType Instance(std::string_view id, std::string_view gpu_id, int gpu_count) {
  catalog::InstanceType type;
  type.id = id;
  type.gpu_id = gpu_id;
  type.gpu_count = gpu_count;
  return type;
}

// "4g.20gb@0" for each instance, sorted, so tests compare layouts regardless of creation order.
std::multiset<std::string> Placements(const Layout& layout) {
  std::multiset<std::string> out;
  for (const PlacedInstance& i : layout.instances) {
    out.insert(std::string(i.profile->name) + "@" + std::to_string(i.start));
  }
  return out;
}

bool NoOverlap(const Layout& layout) {
  uint64_t seen = 0;
  for (const PlacedInstance& i : layout.instances) {
    uint64_t mask = UnitMask(i.start, i.profile->placement_size);
    if ((seen & mask) != 0) return false;
    seen |= mask;
  }
  return true;
}

TEST(LayoutValidator, AcceptsTheSeedLayoutOnA100WithConcretePlacements) {
  Result<Layout> layout = ValidateLayout(kA100, Names{"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"});
  ASSERT_TRUE(layout.has_value()) << layout.error().message;
  EXPECT_EQ(layout->gpu, &kA100);
  EXPECT_EQ(Placements(*layout),
            (std::multiset<std::string>{"4g.20gb@0", "2g.10gb@4", "1g.5gb@6"}));
  EXPECT_TRUE(NoOverlap(*layout));
}

TEST(LayoutValidator, AcceptsNvmlAndSageMakerSpellingsAlike) {
  Result<Layout> nvml = ValidateLayout(kH100, Names{"3g.40gb", "2g.20gb"});
  Result<Layout> sagemaker = ValidateLayout(kH100, Names{"mig-3g.40gb", "MIG-2g.20gb"});
  ASSERT_TRUE(nvml.has_value()) << nvml.error().message;
  ASSERT_TRUE(sagemaker.has_value()) << sagemaker.error().message;
  EXPECT_EQ(nvml->instances, sagemaker->instances);
}

TEST(LayoutValidator, ResolvesTheSameNameToEachGpusOwnGeometry) {
  auto on_a100 = ResolveProfiles(kA100, Names{"1g.10gb"});
  auto on_h100 = ResolveProfiles(kH100, Names{"1g.10gb"});
  ASSERT_TRUE(on_a100.has_value() && on_h100.has_value());
  EXPECT_EQ((*on_a100)[0]->memory_slices, 2);
  EXPECT_EQ((*on_h100)[0]->memory_slices, 1);
}

TEST(LayoutValidator, TwoThreeGsFillAnH100AtStartsZeroAndFour) {
  Result<Layout> layout = ValidateLayout(kH100, Names{"mig-3g.40gb", "mig-3g.40gb"});
  ASSERT_TRUE(layout.has_value()) << layout.error().message;
  EXPECT_EQ(Placements(*layout), (std::multiset<std::string>{"3g.40gb@0", "3g.40gb@4"}));
}

TEST(LayoutValidator, RejectsOverCapacityWithProvidedAgainstRequested) {
  Result<Layout> layout = ValidateLayout(kH100, Names{"mig-4g.40gb", "mig-4g.40gb"});
  ASSERT_FALSE(layout.has_value());
  EXPECT_EQ(layout.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(layout.error().message,
              HasSubstr("h100-80gb provides 7 compute slices and 8 memory slices; layout "
                        "[mig-4g.40gb, mig-4g.40gb] requests 8 compute slices and 8 memory "
                        "slices (rule: slice sums)"));
}

TEST(LayoutValidator, RejectsMemoryOverCapacityEvenWhenComputeFits) {
  // 3 + 3 + 1 = 7 compute slices, but 4 + 4 + 2 = 10 memory slices.
  Result<Layout> layout = ValidateLayout(kH100, Names{"3g.40gb", "3g.40gb", "1g.20gb"});
  ASSERT_FALSE(layout.has_value());
  EXPECT_THAT(layout.error().message, HasSubstr("requests 7 compute slices and 10 memory slices"));
}

TEST(LayoutValidator, RejectsAProfileAboveItsCapNamingTheCap) {
  Result<Layout> layout = ValidateLayout(kA100, Names{"2g.10gb", "2g.10gb", "2g.10gb", "2g.10gb"});
  ASSERT_FALSE(layout.has_value());
  EXPECT_THAT(layout.error().message,
              HasSubstr("a100-40gb provides at most 3 mig-2g.10gb where layout [mig-2g.10gb, "
                        "mig-2g.10gb, mig-2g.10gb, mig-2g.10gb] requests 4 (rule: per-profile "
                        "cap)"));
}

TEST(LayoutValidator, RejectsASecondMediaExtensionInstance) {
  Result<Layout> layout = ValidateLayout(kH100, Names{"1g.10gb+me", "1g.10gb+me"});
  ASSERT_FALSE(layout.has_value());
  EXPECT_THAT(layout.error().message,
              HasSubstr("h100-80gb provides one +me (media-extension) instance; layout "
                        "[mig-1g.10gb+me, mig-1g.10gb+me] requests 2 (rule: at most one +me)"));
}

TEST(LayoutValidator, AcceptsOneMediaExtensionInstanceBesidePlainOnes) {
  EXPECT_TRUE(ValidateLayout(kH100, Names{"1g.10gb+me", "1g.10gb", "3g.40gb"}).has_value());
}

TEST(LayoutValidator, RejectsAPlainProfileBesideMeAll) {
  Result<Layout> layout = ValidateLayout(kRtxPro6000, Names{"1g.24gb+me.all", "1g.24gb"});
  ASSERT_FALSE(layout.has_value());
  EXPECT_THAT(layout.error().message,
              HasSubstr("puts mig-1g.24gb beside it (rule: +me.all only beside -me profiles)"));
}

TEST(LayoutValidator, AcceptsMeAllBesideNoMeProfiles) {
  Result<Layout> layout = ValidateLayout(
      kRtxPro6000, Names{"1g.24gb+me.all", "1g.24gb-me", "1g.24gb-me", "1g.24gb-me"});
  ASSERT_TRUE(layout.has_value()) << layout.error().message;
  EXPECT_EQ(layout->instances.size(), 4u);
}

TEST(LayoutValidator, RejectsAProfileNeedingANewerDriverNamingProfileAndDriver) {
  LayoutOptions options{.driver = Driver("470.256.02")};
  Result<Layout> layout = ValidateLayout(kA100, Names{"mig-1g.10gb"}, options);
  ASSERT_FALSE(layout.has_value());
  EXPECT_EQ(layout.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(layout.error().message,
              HasSubstr("on a100-40gb, mig-1g.10gb needs driver R525 or newer; layout "
                        "[mig-1g.10gb] is requested on driver 470.256.02 (rule: profile driver "
                        "minimum)"));
}

TEST(LayoutValidator, AcceptsAProfileOnItsMinimumDriverOrNewer) {
  LayoutOptions options{.driver = Driver("525.60.13")};
  EXPECT_TRUE(ValidateLayout(kA100, Names{"mig-1g.10gb"}, options).has_value());
}

TEST(LayoutValidator, RejectsFourGBesideThreeGBeforeR510) {
  LayoutOptions options{.driver = Driver("470.256.02")};
  Result<Layout> layout = ValidateLayout(kA100, Names{"4g.20gb", "3g.20gb"}, options);
  ASSERT_FALSE(layout.has_value());
  EXPECT_THAT(layout.error().message, HasSubstr("mig-4g.20gb"));
  EXPECT_THAT(layout.error().message, HasSubstr("mig-3g.20gb"));
  EXPECT_THAT(layout.error().message, HasSubstr("only from driver R510 on"));
  EXPECT_THAT(layout.error().message, HasSubstr("(rule: 4g+3g needs R510)"));
}

TEST(LayoutValidator, AcceptsFourGBesideThreeGFromR510) {
  LayoutOptions options{.driver = Driver("510.47.03")};
  Result<Layout> layout = ValidateLayout(kA100, Names{"4g.20gb", "3g.20gb"}, options);
  ASSERT_TRUE(layout.has_value()) << layout.error().message;
  EXPECT_EQ(Placements(*layout), (std::multiset<std::string>{"4g.20gb@0", "3g.20gb@4"}));
}

TEST(LayoutValidator, RejectsADriverOlderThanTheGpusMigMinimum) {
  LayoutOptions options{.driver = Driver("470.256.02")};
  Result<Layout> layout = ValidateLayout(kH100, Names{"1g.10gb"}, options);
  ASSERT_FALSE(layout.has_value());
  EXPECT_THAT(layout.error().message,
              HasSubstr("h100-80gb provides MIG from driver 525.85.12 on; layout [mig-1g.10gb] "
                        "is requested on driver 470.256.02 (rule: GPU MIG driver minimum)"));
}

TEST(LayoutValidator, IgnoresDriverRulesWhenNoDriverIsGiven) {
  EXPECT_TRUE(ValidateLayout(kA100, Names{"4g.20gb", "3g.20gb"}).has_value());
  EXPECT_TRUE(ValidateLayout(kA100, Names{"1g.10gb"}).has_value());
}

TEST(LayoutValidator, SageMakerRulesRejectSuffixedProfiles) {
  LayoutOptions options{.sagemaker_rules = true};
  for (const char* name : {"1g.10gb+me"}) {
    Result<Layout> layout = ValidateLayout(kH100, Names{name, "3g.40gb"}, options);
    ASSERT_FALSE(layout.has_value()) << name;
    EXPECT_THAT(layout.error().message,
                HasSubstr("requests mig-1g.10gb+me (rule: SageMaker takes no suffixed profiles)"));
  }
  for (const char* name : {"1g.24gb-me", "1g.24gb+gfx", "1g.24gb+me.all"}) {
    EXPECT_FALSE(ValidateLayout(kRtxPro6000, Names{name}, options).has_value()) << name;
  }
}

TEST(LayoutValidator, SuffixedProfilesAreValidOutsideSageMaker) {
  EXPECT_TRUE(ValidateLayout(kRtxPro6000, Names{"1g.24gb+gfx", "2g.48gb"}).has_value());
}

TEST(LayoutValidator, SageMakerRulesRejectAnEmptyLayout) {
  Result<Layout> layout = ValidateLayout(kH100, Names{}, LayoutOptions{.sagemaker_rules = true});
  ASSERT_FALSE(layout.has_value());
  EXPECT_THAT(layout.error().message,
              HasSubstr("layout [] is empty (rule: SageMaker layout not empty)"));
}

TEST(LayoutValidator, ReportsAnUnknownProfileAsNotFound) {
  Result<Layout> layout = ValidateLayout(kH100, Names{"mig-3g.40gb", "mig-5g.50gb"});
  ASSERT_FALSE(layout.has_value());
  EXPECT_EQ(layout.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(layout.error().message, HasSubstr("5g.50gb"));
  EXPECT_THAT(layout.error().message, Not(HasSubstr("mig-3g.40gb'")));
}

TEST(LayoutValidator, ReportsEveryBrokenRuleOnItsOwnLine) {
  LayoutOptions options{.driver = Driver("470.256.02")};
  Result<Layout> layout = ValidateLayout(kA100, Names{"4g.20gb", "4g.20gb", "1g.10gb"}, options);
  ASSERT_FALSE(layout.has_value());
  const std::string& m = layout.error().message;
  EXPECT_THAT(m, HasSubstr("(rule: profile driver minimum)\n"));
  EXPECT_THAT(m, HasSubstr("(rule: per-profile cap)\n"));
  EXPECT_THAT(m, HasSubstr("(rule: slice sums)"));
}

TEST(LayoutValidator, BacktracksToPlaceThreeGBesideTwoTwoGs) {
  // 3g@0 leaves no 2g start at 6; only 3g@4 + 2g@0 + 2g@2 works.
  Result<Layout> layout = ValidateLayout(kA100, Names{"3g.20gb", "2g.10gb", "2g.10gb"});
  ASSERT_TRUE(layout.has_value()) << layout.error().message;
  EXPECT_EQ(Placements(*layout),
            (std::multiset<std::string>{"3g.20gb@4", "2g.10gb@0", "2g.10gb@2"}));
}

TEST(LayoutValidator, ListsInstancesLargestFirstForCreation) {
  Result<Layout> layout = ValidateLayout(kA100, Names{"1g.5gb", "2g.10gb", "4g.20gb"});
  ASSERT_TRUE(layout.has_value());
  ASSERT_EQ(layout->instances.size(), 3u);
  EXPECT_EQ(layout->instances[0].profile->name, "4g.20gb");
  EXPECT_EQ(layout->instances[1].profile->name, "2g.10gb");
  EXPECT_EQ(layout->instances[2].profile->name, "1g.5gb");
}

TEST(LayoutValidator, RefusesAGpuWithoutMig) {
  Result<Layout> layout = ValidateLayout(kNoMig, Names{"1g.5gb"});
  ASSERT_FALSE(layout.has_value());
  EXPECT_EQ(layout.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(layout.error().message, HasSubstr("l4 provides no MIG profiles"));
}

TEST(LayoutValidator, ChecksRulesButRefusesToPlaceWithoutPlacementData) {
  Result<Layout> over = ValidateLayout(kUnplaced, Names{"1g.16gb", "1g.16gb", "1g.16gb"});
  ASSERT_FALSE(over.has_value());
  EXPECT_THAT(over.error().message, HasSubstr("(rule: per-profile cap)"));
  Result<Layout> fine = ValidateLayout(kUnplaced, Names{"1g.16gb"});
  ASSERT_FALSE(fine.has_value());
  EXPECT_EQ(fine.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(fine.error().message, HasSubstr("no placement data"));
}

TEST(LayoutValidator, CountsPartitionsOfAnInstanceCarvedUniformly) {
  const catalog::InstanceType p4d = Instance("ml.p4d.24xlarge", "a100-40gb", 8);
  Result<Layout> layout = ValidateLayout(kA100, Names{"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"});
  ASSERT_TRUE(layout.has_value());
  Result<InstancePartitions> parts = PartitionsPerInstance(p4d, *layout);
  ASSERT_TRUE(parts.has_value()) << parts.error().message;
  EXPECT_EQ(parts->total, 24);
  ASSERT_EQ(parts->counts.size(), 3u);
  EXPECT_EQ(parts->counts[0].profile->name, "4g.20gb");  // Layout (creation) order.
  for (const auto& c : parts->counts) {
    EXPECT_EQ(c.per_gpu, 1);
    EXPECT_EQ(c.per_instance, 8);
  }
}

TEST(LayoutValidator, RefusesToCountPartitionsForAnotherGpusInstance) {
  const catalog::InstanceType p5 = Instance("ml.p5.48xlarge", "h100-80gb", 8);
  Result<Layout> layout = ValidateLayout(kA100, Names{"mig-7g.40gb"});
  ASSERT_TRUE(layout.has_value());
  Result<InstancePartitions> parts = PartitionsPerInstance(p5, *layout);
  ASSERT_FALSE(parts.has_value());
  EXPECT_THAT(parts.error().message, HasSubstr("ml.p5.48xlarge carries h100-80gb GPUs"));
}

}  // namespace
}  // namespace carve::core
