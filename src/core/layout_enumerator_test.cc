#include "core/layout_enumerator.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/layout_placer.h"
#include "core/layout_test_gpus.h"
#include "core/layout_validator.h"

namespace carve::core {
namespace {

using catalog::MigProfile;
using test_gpus::kA100;
using test_gpus::kA100Profiles;
using test_gpus::kH100;
using test_gpus::kH100Profiles;
using test_gpus::kRtxPro6000;
using test_gpus::kUnplaced;

// The MIG guide's A100 diagram uses the five original profiles.
std::vector<const MigProfile*> A100Classic() {
  return {&kA100Profiles[0], &kA100Profiles[3], &kA100Profiles[4], &kA100Profiles[5],
          &kA100Profiles[6]};
}

std::string Key(const Layout& layout) {
  std::string key;
  for (const PlacedInstance& i : layout.instances) {
    key += std::string(i.profile->name) + "@" + std::to_string(i.start) + " ";
  }
  return key;
}

TEST(LayoutEnumerator, FindsTheNineteenA100LayoutsOfTheMigGuideFromR510) {
  auto layouts = EnumerateMaximalLayouts(kA100, {.profiles = A100Classic()});
  ASSERT_TRUE(layouts.has_value()) << layouts.error().message;
  EXPECT_EQ(layouts->size(), 19u);
}

TEST(LayoutEnumerator, FindsEighteenA100LayoutsBeforeR510) {
  auto layouts = EnumerateMaximalLayouts(
      kA100, {.profiles = A100Classic(), .rules = {.driver = catalog::DriverVersion{470, 0, 0}}});
  ASSERT_TRUE(layouts.has_value());
  EXPECT_EQ(layouts->size(), 18u);
}

TEST(LayoutEnumerator, ListsEachLayoutOnce) {
  for (const catalog::GpuModel* gpu : {&kA100, &kH100, &kRtxPro6000}) {
    auto layouts = EnumerateMaximalLayouts(*gpu);
    ASSERT_TRUE(layouts.has_value());
    std::set<std::string> keys;
    for (const Layout& l : *layouts) EXPECT_TRUE(keys.insert(Key(l)).second) << Key(l);
  }
}

TEST(LayoutEnumerator, EveryLayoutIsValidAndMaximal) {
  for (const catalog::GpuModel* gpu : {&kA100, &kH100, &kRtxPro6000}) {
    auto layouts = EnumerateMaximalLayouts(*gpu);
    ASSERT_TRUE(layouts.has_value());
    ASSERT_FALSE(layouts->empty());
    for (const Layout& l : *layouts) {
      EXPECT_TRUE(CheckPinned(l).ok()) << gpu->id << " " << Key(l);
      auto openings = OpenProfiles(l);
      ASSERT_TRUE(openings.has_value());
      EXPECT_TRUE(openings->empty()) << gpu->id << " " << Key(l) << " is not maximal";
    }
  }
}

TEST(LayoutEnumerator, RestrictingToThreeGOnH100GivesTheOneLayoutOfTwo) {
  auto layouts = EnumerateMaximalLayouts(kH100, {.profiles = {&kH100Profiles[4]}});
  ASSERT_TRUE(layouts.has_value());
  ASSERT_EQ(layouts->size(), 1u);
  EXPECT_EQ(Key((*layouts)[0]), "3g.40gb@0 3g.40gb@4 ");
}

TEST(LayoutEnumerator, ListsInstancesInStartOrder) {
  auto layouts = EnumerateMaximalLayouts(kA100);
  ASSERT_TRUE(layouts.has_value());
  for (const Layout& l : *layouts) {
    for (size_t i = 1; i < l.instances.size(); ++i) {
      EXPECT_LT(l.instances[i - 1].start, l.instances[i].start) << Key(l);
    }
  }
}

TEST(LayoutEnumerator, SageMakerRulesLeaveOutSuffixedProfiles) {
  auto layouts = EnumerateMaximalLayouts(kRtxPro6000, {.rules = {.sagemaker_rules = true}});
  ASSERT_TRUE(layouts.has_value());
  ASSERT_FALSE(layouts->empty());
  for (const Layout& l : *layouts) {
    for (const PlacedInstance& i : l.instances) {
      EXPECT_EQ(i.profile->suffix, catalog::ProfileSuffix::kNone) << Key(l);
    }
  }
}

TEST(LayoutEnumerator, RefusesAProfileOfAnotherGpu) {
  auto layouts = EnumerateMaximalLayouts(kA100, {.profiles = {&kH100Profiles[0]}});
  ASSERT_FALSE(layouts.has_value());
  EXPECT_EQ(layouts.error().code, ErrorCode::kInvalidArgument);
}

TEST(LayoutEnumerator, RefusesAGpuWithoutMig) {
  auto layouts = EnumerateMaximalLayouts(test_gpus::kNoMig);
  ASSERT_FALSE(layouts.has_value());
  EXPECT_EQ(layouts.error().message, "l4 provides no MIG profiles; it has no MIG layouts");
}

TEST(LayoutEnumerator, RefusesAGpuWithoutPlacementData) {
  auto layouts = EnumerateMaximalLayouts(kUnplaced);
  ASSERT_FALSE(layouts.has_value());
  EXPECT_EQ(layouts.error().code, ErrorCode::kFailedPrecondition);
}

TEST(LayoutEnumerator, ListsNothingWhenTheDriverPredatesMig) {
  auto layouts =
      EnumerateMaximalLayouts(kH100, {.rules = {.driver = catalog::DriverVersion{470, 0, 0}}});
  ASSERT_TRUE(layouts.has_value());
  EXPECT_TRUE(layouts->empty());
}

}  // namespace
}  // namespace carve::core
