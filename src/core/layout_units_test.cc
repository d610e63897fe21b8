#include "core/layout_units.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/fleet_fixtures.h"

namespace carve::core {
namespace {

using fixtures::Gpu;
using fixtures::LayoutOf;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The seed's layout covers units 0..6; 1g.5gb, its smallest profile, cannot start at 7.
TEST(UnitsOf, TheSeedLayoutStrandsTheLastUnitOfAnA100) {
  UnitUse u = UnitsOf(*Gpu("a100-40gb"), fixtures::SeedA100Layout());
  EXPECT_EQ(u.placement_units, 8);
  EXPECT_THAT(u.free, ElementsAre(7));
  EXPECT_THAT(u.stranded, ElementsAre(7));
}

TEST(UnitsOf, AFullLayoutLeavesNothingFree) {
  UnitUse u = UnitsOf(*Gpu("a100-40gb"), LayoutOf("a100-40gb", {{"3g.20gb", 0}, {"3g.20gb", 4}}));
  EXPECT_THAT(u.free, IsEmpty());
  EXPECT_THAT(u.stranded, IsEmpty());
}

// 2g.10gb may start at 0, 2 or 4: with units 4..7 free it could use 4..5, so those are free but
// not stranded; 1g.5gb is not in this layout, and no 2g start covers 6..7.
TEST(UnitsOf, FreeUnitsAProfileOfTheLayoutCouldUseAreNotStranded) {
  UnitUse u = UnitsOf(*Gpu("a100-40gb"), LayoutOf("a100-40gb", {{"2g.10gb", 0}, {"2g.10gb", 2}}));
  EXPECT_THAT(u.free, ElementsAre(4, 5, 6, 7));
  EXPECT_THAT(u.stranded, ElementsAre(6, 7));
}

TEST(UnitsOf, AnEmptyLayoutHasEveryUnitFreeAndStrandedForLackOfProfiles) {
  UnitUse u = UnitsOf(*Gpu("h100-80gb"), Layout{});
  EXPECT_EQ(u.free.size(), 8u);
  EXPECT_EQ(u.stranded.size(), 8u);
}

}  // namespace
}  // namespace carve::core
