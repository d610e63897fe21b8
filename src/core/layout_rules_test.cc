#include "core/layout_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/layout_test_gpus.h"

namespace carve::core {
namespace {

using catalog::DriverVersion;
using catalog::MigProfile;
using test_gpus::kA100;
using test_gpus::kA100Profiles;
using test_gpus::kRtxPro6000;
using test_gpus::kRtxProfiles;
using ::testing::ElementsAre;

const MigProfile& kOneG = kA100Profiles[0];
const MigProfile& kOneGMe = kA100Profiles[1];
const MigProfile& kOneG10 = kA100Profiles[2];
const MigProfile& kThreeG = kA100Profiles[4];
const MigProfile& kFourG = kA100Profiles[5];

TEST(LayoutRules, TallyAddsAndRemovesSlicesAndCounts) {
  ProfileTally t(kA100);
  t.Add(kThreeG);
  t.Add(kOneGMe);
  EXPECT_EQ(t.instances(), 2);
  EXPECT_EQ(t.compute_slices(), 4);
  EXPECT_EQ(t.memory_slices(), 5);
  EXPECT_EQ(t.me(), 1);
  EXPECT_EQ(t.count(kThreeG), 1);
  t.Remove(kOneGMe);
  EXPECT_EQ(t.me(), 0);
  EXPECT_EQ(t.compute_slices(), 3);
}

TEST(LayoutRules, ProfileIndexRefusesRowsOfAnotherGpu) {
  EXPECT_EQ(ProfileIndex(kA100, &kA100Profiles[3]), 3);
  EXPECT_EQ(ProfileIndex(kA100, &kRtxProfiles[0]), -1);
  EXPECT_EQ(ProfileIndex(kA100, nullptr), -1);
}

TEST(LayoutRules, SliceSumsBreakOnComputeOrMemoryAlone) {
  ProfileTally memory(kA100);  // 3g + 3g + 1g.10gb: 7 compute, 10 memory.
  memory.Add(kThreeG);
  memory.Add(kThreeG);
  memory.Add(kOneG10);
  EXPECT_TRUE(Breaks(LayoutRule::kSliceSums, memory, {}));
  ProfileTally fits(kA100);
  fits.Add(kFourG);
  fits.Add(kThreeG);
  EXPECT_FALSE(Breaks(LayoutRule::kSliceSums, fits, {}));
}

TEST(LayoutRules, MultisetScopeLeavesOutSums) {
  ProfileTally t(kA100);
  for (int i = 0; i < 3; ++i) t.Add(kThreeG);  // Over cap 2 and over the sums.
  EXPECT_THAT(BrokenRules(t, {}, RuleScope::kMultiset), ElementsAre(LayoutRule::kProfileCap));
  EXPECT_THAT(BrokenRules(t, {}, RuleScope::kWithSums),
              ElementsAre(LayoutRule::kProfileCap, LayoutRule::kSliceSums));
  EXPECT_FALSE(KeepsRules(t, {}, RuleScope::kMultiset));
}

TEST(LayoutRules, DriverRulesApplyOnlyWhenADriverIsGiven) {
  ProfileTally t(kA100);
  t.Add(kFourG);
  t.Add(kThreeG);
  EXPECT_FALSE(Breaks(LayoutRule::kFourPlusThreeDriver, t, {}));
  EXPECT_TRUE(Breaks(LayoutRule::kFourPlusThreeDriver, t, {.driver = DriverVersion{470, 82, 1}}));
  EXPECT_FALSE(Breaks(LayoutRule::kFourPlusThreeDriver, t, {.driver = DriverVersion{510, 0, 0}}));
}

TEST(LayoutRules, MeAllRefusesEveryProfileButNoMe) {
  ProfileTally t(kRtxPro6000);
  t.Add(kRtxProfiles[1]);  // +me.all
  t.Add(kRtxProfiles[2]);  // -me
  EXPECT_FALSE(Breaks(LayoutRule::kMeAllBesideNoMe, t, {}));
  t.Add(kRtxProfiles[3]);  // +gfx
  EXPECT_TRUE(Breaks(LayoutRule::kMeAllBesideNoMe, t, {}));
}

TEST(LayoutRules, ProfileAllowedFollowsDriverAndSageMakerOptions) {
  EXPECT_TRUE(ProfileAllowed(kA100, kOneG10, {}));
  EXPECT_FALSE(ProfileAllowed(kA100, kOneG10, {.driver = DriverVersion{470, 0, 0}}));
  EXPECT_FALSE(ProfileAllowed(kA100, kOneGMe, {.sagemaker_rules = true}));
  EXPECT_TRUE(ProfileAllowed(kA100, kOneG, {.sagemaker_rules = true}));
  EXPECT_FALSE(ProfileAllowed(kA100, kOneG, {.driver = DriverVersion{440, 0, 0}}));
}

TEST(LayoutRules, LayoutTextUsesSageMakerSpelling) {
  const MigProfile* profiles[] = {&kFourG, &kOneG};
  EXPECT_EQ(LayoutText(profiles), "[mig-4g.20gb, mig-1g.5gb]");
  const PlacedInstance placed[] = {{&kFourG, 0}, {&kOneG, 6}};
  EXPECT_EQ(LayoutText(placed), "[mig-4g.20gb@0, mig-1g.5gb@6]");
}

}  // namespace
}  // namespace carve::core
