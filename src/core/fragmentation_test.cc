// The fragmentation metric: free capacity of the shape's kind that no copy of the shape can use.
#include <gtest/gtest.h>

#include "core/fleet_fixtures.h"
#include "core/placement.h"

namespace carve::core {
namespace {

using fixtures::Cards;
using fixtures::Node;

PlacementEngine Engine(std::vector<NodeSpec> nodes) {
  auto e = PlacementEngine::Create(std::move(nodes));
  EXPECT_TRUE(e.has_value()) << e.error().message;
  return std::move(e).value();
}

ResolvedRequest Shape(const PlacementEngine& e, const Request& r) { return e.Resolve(r).value(); }

void Take(PlacementEngine& e, const Request& r, int copies = 1) {
  ASSERT_TRUE(e.Place(r, copies, Strategy::kBinpack)->placed());
}

// The worked example in fragmentation.cc.
TEST(Fragmentation, CountsCoreThatHostLimitsLeaveUnusableAsStranded) {
  auto e = Engine({Node("n", 10, 1 << 20, Cards(2, "a10g", GpuMode::kMgpu))});
  Take(e, Request::Share(MgpuShare{50, 1000}, 2000, 0));
  FragmentationReport f = e.Fragmentation(Shape(e, Request::Share(MgpuShare{30, 1000}, 2000, 0)));
  EXPECT_EQ(f.unit, "core percent");
  EXPECT_EQ(f.free, 150);
  EXPECT_EQ(f.copies, 4);
  EXPECT_EQ(f.usable, 120);
  EXPECT_EQ(f.stranded, 30);
  EXPECT_EQ(f.stranded_permille, 200);
  const int64_t card = fixtures::Gpu("a10g")->memory_mib;
  EXPECT_EQ(f.free_memory_mib, 2 * card - 1000);
  EXPECT_EQ(f.stranded_memory_mib, 2 * card - 1000 - 4000);
}

TEST(Fragmentation, CountsCoreOnACardWithSixteenWorkersAsStranded) {
  auto e = Engine({Node("n", 64, 1 << 20, Cards(1, "a10g", GpuMode::kMgpu))});
  Take(e, Request::Share(MgpuShare{5, 256}), 16);
  FragmentationReport f = e.Fragmentation(Shape(e, Request::Share(MgpuShare{5, 256})));
  EXPECT_EQ(f.free, 20);
  EXPECT_EQ(f.usable, 0);
  EXPECT_EQ(f.stranded, 20);
  EXPECT_EQ(f.stranded_permille, 1000);
}

TEST(Fragmentation, CountsPartiallyUsedCardsAsStrandedForWholeCardShares) {
  auto e = Engine({Node("n", 64, 1 << 20, Cards(3, "a10g", GpuMode::kMgpu))});
  Take(e, Request::Share(MgpuShare{40, 1000}));
  FragmentationReport f = e.Fragmentation(Shape(e, Request::Share(MgpuShare{100, {}})));
  EXPECT_EQ(f.free, 260);
  EXPECT_EQ(f.usable, 200);
  EXPECT_EQ(f.stranded, 60);
  EXPECT_EQ(f.copies, 2);
}

TEST(Fragmentation, CountsFreePartitionsOfOtherProfilesAsStrandedForAMigShape) {
  auto e = Engine(
      {Node("n", 96, 1 << 20, Cards(2, "a100-40gb", GpuMode::kMig, fixtures::SeedA100Layout()))});
  Take(e, Request::Partition("4g.20gb"));
  FragmentationReport f = e.Fragmentation(Shape(e, Request::Partition("1g.5gb")));
  EXPECT_EQ(f.unit, "compute slices");
  // Free: GPU0 2g+1g (3 slices), GPU1 4g+2g+1g (7 slices); usable: two 1g (1 slice each).
  EXPECT_EQ(f.free, 10);
  EXPECT_EQ(f.usable, 2);
  EXPECT_EQ(f.stranded, 8);
  EXPECT_EQ(f.copies, 2);
}

TEST(Fragmentation, CountsGpusLeftOverByAMultiGpuShapeAsStranded) {
  auto e = Engine({Node("a", 96, 1 << 20, Cards(3, "a10g", GpuMode::kWhole)),
                   Node("b", 96, 1 << 20, Cards(4, "a10g", GpuMode::kWhole))});
  FragmentationReport f = e.Fragmentation(Shape(e, Request::WholeGpus(2)));
  EXPECT_EQ(f.unit, "GPUs");
  EXPECT_EQ(f.free, 7);
  EXPECT_EQ(f.usable, 6);
  EXPECT_EQ(f.stranded, 1);
  EXPECT_EQ(f.copies, 3);
}

TEST(Fragmentation, ReportsNothingStrandedOnAnEmptyFleetOfTheRightShape) {
  auto e = Engine({Node("n", 64, 1 << 20, Cards(2, "a10g", GpuMode::kMgpu))});
  FragmentationReport f = e.Fragmentation(Shape(e, Request::Share(MgpuShare{25, 1024})));
  EXPECT_EQ(f.free, 200);
  EXPECT_EQ(f.stranded, 0);
  EXPECT_EQ(f.stranded_permille, 0);
  EXPECT_EQ(f.copies, 8);
}

}  // namespace
}  // namespace carve::core
