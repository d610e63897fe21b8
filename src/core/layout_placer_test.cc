#include "core/layout_placer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "core/layout_test_gpus.h"

namespace carve::core {
namespace {

using catalog::MigProfile;
using test_gpus::kA100;
using test_gpus::kA100Profiles;
using test_gpus::kH100;
using test_gpus::kH100Profiles;
using test_gpus::kRtxPro6000;
using test_gpus::kRtxProfiles;
using ::testing::HasSubstr;

const MigProfile& kOneG = kA100Profiles[0];
const MigProfile& kOneG10 = kA100Profiles[2];
const MigProfile& kTwoG = kA100Profiles[3];
const MigProfile& kThreeG = kA100Profiles[4];
const MigProfile& kFourG = kA100Profiles[5];
const MigProfile& kH100ThreeG = kH100Profiles[4];

Layout A100With(std::vector<PlacedInstance> instances) { return Layout{&kA100, instances}; }

std::vector<int> StartsOf(const std::vector<Opening>& openings, const MigProfile& p) {
  for (const Opening& o : openings) {
    if (o.profile == &p) return o.starts;
  }
  return {};
}

TEST(LayoutPlacer, TwoThreeGsOnAnH100LeaveNoOpening) {
  Layout pinned{&kH100, {{&kH100ThreeG, 0}, {&kH100ThreeG, 4}}};
  Result<std::vector<Opening>> openings = OpenProfiles(pinned);
  ASSERT_TRUE(openings.has_value()) << openings.error().message;
  EXPECT_TRUE(openings->empty());
}

TEST(LayoutPlacer, ListsEveryFreeStartOfEveryProfileThatStillFits) {
  Result<std::vector<Opening>> openings = OpenProfiles(A100With({{&kThreeG, 0}}));
  ASSERT_TRUE(openings.has_value()) << openings.error().message;
  EXPECT_EQ(StartsOf(*openings, kOneG), (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(StartsOf(*openings, kOneG10), (std::vector<int>{4, 6}));
  EXPECT_EQ(StartsOf(*openings, kTwoG), (std::vector<int>{4}));
  EXPECT_EQ(StartsOf(*openings, kThreeG), (std::vector<int>{4}));
  EXPECT_TRUE(StartsOf(*openings, kFourG).empty());
}

TEST(LayoutPlacer, OpeningsFollowTheDriverGiven) {
  LayoutOptions old{.driver = catalog::DriverVersion{470, 256, 2}};
  Result<std::vector<Opening>> openings = OpenProfiles(A100With({{&kFourG, 0}}), old);
  ASSERT_TRUE(openings.has_value());
  EXPECT_TRUE(StartsOf(*openings, kThreeG).empty());  // 4g+3g needs R510.
  EXPECT_TRUE(StartsOf(*openings, kOneG10).empty());  // 1g.10gb needs R525.
  EXPECT_EQ(StartsOf(*openings, kTwoG), (std::vector<int>{4}));
}

TEST(LayoutPlacer, ThreeGAtFourAdmitsFourOneGsWhereThreeGAtZeroAdmitsThree) {
  const MigProfile* four_ones[] = {&kOneG, &kOneG, &kOneG, &kOneG};
  Result<Addition> at_four = PlaceAdditions(A100With({{&kThreeG, 4}}), four_ones);
  ASSERT_TRUE(at_four.has_value());
  EXPECT_TRUE(at_four->fits()) << at_four->reason;
  Result<Addition> at_zero = PlaceAdditions(A100With({{&kThreeG, 0}}), four_ones);
  ASSERT_TRUE(at_zero.has_value());
  EXPECT_FALSE(at_zero->fits());
}

TEST(LayoutPlacer, KeepsPinnedInstancesFirstAndPlacesAdditionsAroundThem) {
  const Layout pinned = A100With({{&kOneG, 0}});
  const MigProfile* additions[] = {&kOneG, &kThreeG};
  Result<Addition> added = PlaceAdditions(pinned, additions);
  ASSERT_TRUE(added.has_value());
  ASSERT_TRUE(added->fits()) << added->reason;
  ASSERT_EQ(added->layout.instances.size(), 3u);
  EXPECT_EQ(added->layout.instances[0], (PlacedInstance{&kOneG, 0}));
  EXPECT_EQ(added->layout.instances[1], (PlacedInstance{&kThreeG, 4}));
  EXPECT_EQ(added->layout.instances[2], (PlacedInstance{&kOneG, 1}));
}

TEST(LayoutPlacer, DoesNotFitNamesTheFreeUnitsAndTheRule) {
  const MigProfile* additions[] = {&kFourG};
  Result<Addition> added = PlaceAdditions(A100With({{&kOneG, 3}}), additions);
  ASSERT_TRUE(added.has_value());
  ASSERT_FALSE(added->fits());
  EXPECT_THAT(added->reason,
              HasSubstr("a100-40gb has placement units 0-2, 4-7 free of 8; pinned "
                        "[mig-1g.5gb@3] plus [mig-4g.20gb] keeps every counting rule but has no "
                        "non-overlapping placement (mig-4g.20gb starts at {0} size 4) (rule: "
                        "non-overlapping placement)"));
}

TEST(LayoutPlacer, DoesNotFitWhenAnAdditionBreaksACountingRule) {
  const MigProfile* additions[] = {&kThreeG};
  Result<Addition> added = PlaceAdditions(A100With({{&kThreeG, 0}, {&kThreeG, 4}}), additions);
  ASSERT_TRUE(added.has_value());
  ASSERT_FALSE(added->fits());
  EXPECT_THAT(added->reason, HasSubstr("(rule: per-profile cap)"));
}

TEST(LayoutPlacer, LeavesThePinnedLayoutUnchangedAfterAFailure) {
  const Layout pinned = A100With({{&kThreeG, 0}});
  const Layout before = pinned;
  const MigProfile* additions[] = {&kTwoG, &kTwoG};
  Result<Addition> added = PlaceAdditions(pinned, additions);
  ASSERT_TRUE(added.has_value());
  EXPECT_FALSE(added->fits());
  EXPECT_TRUE(added->layout.instances.empty());
  EXPECT_EQ(pinned.gpu, before.gpu);
  EXPECT_EQ(pinned.instances, before.instances);
}

TEST(LayoutPlacer, RejectsOverlappingPinnedInstances) {
  Result<std::vector<Opening>> openings = OpenProfiles(A100With({{&kThreeG, 0}, {&kTwoG, 2}}));
  ASSERT_FALSE(openings.has_value());
  EXPECT_EQ(openings.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(openings.error().message,
              HasSubstr("pinned instance mig-2g.10gb@2 needs units 2-3 but units 2-3 are taken"));
}

TEST(LayoutPlacer, RejectsAPinnedInstanceAtAStartNvmlDoesNotOffer) {
  Status s = CheckPinned(A100With({{&kOneG, 7}}));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("mig-1g.5gb starts at {0,1,2,3,4,5,6} size 1"));
}

TEST(LayoutPlacer, RejectsAnAdditionFromAnotherGpu) {
  const MigProfile* additions[] = {&kH100ThreeG};
  Result<Addition> added = PlaceAdditions(A100With({}), additions);
  ASSERT_FALSE(added.has_value());
  EXPECT_EQ(added.error().code, ErrorCode::kInvalidArgument);
}

TEST(LayoutPlacer, SageMakerRulesRefuseSuffixedAdditions) {
  const MigProfile* additions[] = {&kA100Profiles[1]};  // 1g.5gb+me
  Result<Addition> added =
      PlaceAdditions(A100With({}), additions, LayoutOptions{.sagemaker_rules = true});
  ASSERT_TRUE(added.has_value());
  EXPECT_FALSE(added->fits());
  EXPECT_THAT(added->reason, HasSubstr("SageMaker takes no suffixed profiles"));
}

TEST(LayoutPlacer, RtxProOneGsAtThreeAndSixShutOutTwoG) {
  Layout pinned{&kRtxPro6000, {{&kRtxProfiles[0], 3}, {&kRtxProfiles[0], 6}}};
  Result<std::vector<Opening>> openings = OpenProfiles(pinned);
  ASSERT_TRUE(openings.has_value());
  EXPECT_TRUE(StartsOf(*openings, kRtxProfiles[4]).empty());
  EXPECT_EQ(StartsOf(*openings, kRtxProfiles[0]), (std::vector<int>{0, 9}));
}

}  // namespace
}  // namespace carve::core
