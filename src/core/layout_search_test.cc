#include "core/layout_search.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/layout_test_gpus.h"

namespace carve::core {
namespace {

using catalog::MigProfile;
using test_gpus::kA100;
using test_gpus::kA100Profiles;
using test_gpus::kRtxPro6000;
using test_gpus::kRtxProfiles;
using test_gpus::kUnplaced;

const MigProfile& A100(const char* name) {
  for (const MigProfile& p : kA100Profiles) {
    if (p.name == name) return p;
  }
  std::abort();
}

TEST(LayoutSearch, UnitMaskCoversStartToStartPlusSize) {
  EXPECT_EQ(UnitMask(0, 8), 0xFFu);
  EXPECT_EQ(UnitMask(4, 4), 0xF0u);
  EXPECT_EQ(UnitMask(6, 1), 0x40u);
  EXPECT_EQ(UnitMask(0, 0), 0u);
}

TEST(LayoutSearch, KnowsWhichGpusCarryPlacementData) {
  EXPECT_TRUE(HasPlacementGeometry(kA100));
  EXPECT_TRUE(HasPlacementGeometry(kRtxPro6000));
  EXPECT_FALSE(HasPlacementGeometry(kUnplaced));
}

TEST(LayoutSearch, StartFreeNeedsAnAllowedStartClearOfOccupiedUnits) {
  const MigProfile& two_g = A100("2g.10gb");
  EXPECT_TRUE(StartFree(two_g, 2, UnitMask(0, 2)));
  EXPECT_FALSE(StartFree(two_g, 0, UnitMask(1, 1)));
  EXPECT_FALSE(StartFree(two_g, 6, 0));  // 2g.10gb starts only at 0, 2, 4.
}

TEST(LayoutSearch, FindsAPlacementAroundOccupiedUnits) {
  const MigProfile* ones[] = {&A100("1g.5gb"), &A100("1g.5gb"), &A100("1g.5gb")};
  auto placed = FindPlacement(kA100, UnitMask(0, 4), ones);
  ASSERT_TRUE(placed.has_value());
  std::vector<int> starts;
  for (const PlacedInstance& i : *placed) starts.push_back(i.start);
  EXPECT_EQ(starts, (std::vector<int>{4, 5, 6}));
}

TEST(LayoutSearch, FindsNothingWhenTheFreeUnitsAreInTheWrongPlace) {
  // Units 4-7 are free, but a fourth 1g.5gb would need start 7, which NVML does not offer.
  const MigProfile* ones[] = {&A100("1g.5gb"), &A100("1g.5gb"), &A100("1g.5gb"), &A100("1g.5gb")};
  EXPECT_FALSE(FindPlacement(kA100, UnitMask(0, 4), ones).has_value());
}

TEST(LayoutSearch, RtxProOneGsAtThreeAndSixLeaveNoRoomForATwoG) {
  // kubesimplify's RTX PRO 6000 example: half the memory free, but not where 2g.48gb starts.
  const MigProfile* two_g[] = {&kRtxProfiles[4]};
  EXPECT_FALSE(FindPlacement(kRtxPro6000, UnitMask(3, 3) | UnitMask(6, 3), two_g).has_value());
  EXPECT_TRUE(FindPlacement(kRtxPro6000, UnitMask(6, 3) | UnitMask(9, 3), two_g).has_value());
}

TEST(LayoutSearch, SortsForCreationLargestFirstThenLowestStart) {
  std::vector<PlacedInstance> instances = {
      {&A100("1g.5gb"), 6}, {&A100("2g.10gb"), 4}, {&A100("1g.5gb"), 5}, {&A100("3g.20gb"), 0}};
  SortForCreation(instances);
  EXPECT_EQ(instances[0].profile->name, "3g.20gb");
  EXPECT_EQ(instances[1].profile->name, "2g.10gb");
  EXPECT_EQ(instances[2].start, 5);
  EXPECT_EQ(instances[3].start, 6);
}

}  // namespace
}  // namespace carve::core
