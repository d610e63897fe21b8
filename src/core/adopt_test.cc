// Re-applying persisted allocations under fresh ids (Adopt), and the views owners draw from:
// Partitions() and Host().
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/fleet_builders.h"
#include "core/fleet_fixtures.h"
#include "core/placement.h"

namespace carve::core {
namespace {

using ::testing::HasSubstr;

PlacementEngine SeedNode() {
  auto node =
      NodeFromInstanceType("p4d-0", "ml.p4d.24xlarge", GpuMode::kMig, fixtures::SeedA100Layout());
  return PlacementEngine::Create({node.value()}).value();
}

TEST(PlacementEngineAdopt, PutsAnAllocationBackOnTheSamePartitionUnderAFreshId) {
  PlacementEngine a = SeedNode();
  auto placed = a.Place(Request::Partition("mig-1g.5gb", 1500, 1024), 1, Strategy::kSpread);
  ASSERT_TRUE(placed.has_value() && placed->placed());
  AllocationRecord rec = a.Describe(placed->allocations[0]).value();
  EXPECT_EQ(rec.cpu_milli, 1500);

  PlacementEngine b = SeedNode();
  rec.id = AllocationId(0);
  auto id = b.Adopt(rec);
  ASSERT_TRUE(id.has_value()) << id.error().message;
  AllocationRecord back = b.Describe(*id).value();
  EXPECT_EQ(back.gpu_indexes, rec.gpu_indexes);
  EXPECT_EQ(back.profile, "1g.5gb");
  EXPECT_EQ(back.partition_start, rec.partition_start);
  EXPECT_EQ(b.Host("p4d-0")->cpu_used_milli, 1500);
}

TEST(PlacementEngineAdopt, RefusesATakenPartitionAndChangesNothing) {
  PlacementEngine e = SeedNode();
  auto placed = e.Place(Request::Partition("4g.20gb"), 1, Strategy::kSpread);
  AllocationRecord rec = e.Describe(placed->allocations[0]).value();
  auto again = e.Adopt(rec);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(again.error().message, HasSubstr("the partition is allocated already"));
  EXPECT_EQ(e.live_allocations(), 1);
}

TEST(PlacementEngineAdopt, NamesAPartitionTheGpuDoesNotHave) {
  PlacementEngine e = SeedNode();
  AllocationRecord rec;
  rec.node = "p4d-0";
  rec.kind = RequestKind::kPartition;
  rec.gpu_indexes = {2};
  rec.profile = "1g.5gb";
  rec.partition_start = 7;
  auto id = e.Adopt(rec);
  ASSERT_FALSE(id.has_value());
  EXPECT_THAT(id.error().message, HasSubstr("GPU 2 has no 1g.5gb partition at start 7"));
  EXPECT_EQ(e.live_allocations(), 0);
}

TEST(PlacementEngineViews, PartitionsListEveryPartitionWithItsHolder) {
  PlacementEngine e = SeedNode();
  auto placed = e.Place(Request::Partition("2g.10gb"), 1, Strategy::kBinpack);
  const AllocationId id = placed->allocations[0];
  const AllocationRecord rec = e.Describe(id).value();
  auto parts = e.Partitions();
  ASSERT_EQ(parts.size(), 24u);  // 8 GPUs x the seed's 3 partitions.
  int held = 0;
  for (const auto& p : parts) {
    EXPECT_EQ(p.node, "p4d-0");
    if (p.allocation == id) {
      ++held;
      EXPECT_EQ(p.gpu, rec.gpu_indexes[0]);
      EXPECT_EQ(p.instance.start, 4);
      EXPECT_EQ(p.instance.profile->name, "2g.10gb");
    } else {
      EXPECT_EQ(p.allocation.value(), 0u);
    }
  }
  EXPECT_EQ(held, 1);
}

TEST(PlacementEngineViews, HostCountsCpuInThousandthsOfAVcpu) {
  PlacementEngine e = SeedNode();
  auto placed = e.Place(Request::Partition("1g.5gb", 250, 512), 4, Strategy::kSpread);
  ASSERT_TRUE(placed->placed());
  auto host = e.Host("p4d-0");
  ASSERT_TRUE(host.has_value());
  EXPECT_EQ(host->cpu_milli, 96'000);
  EXPECT_EQ(host->cpu_used_milli, 1000);
  EXPECT_EQ(host->memory_used_mib, 2048);
  EXPECT_FALSE(e.Host("nope").has_value());
}

TEST(PlacementEngineViews, ANoCapacityReasonReadsFractionalVcpus) {
  auto node = NodeFromInstanceType("g5-0", "ml.g5.xlarge", GpuMode::kWhole).value();
  PlacementEngine e = PlacementEngine::Create({node}).value();
  auto placed = e.Place(Request::WholeGpus(1, 4500, 0), 1, Strategy::kSpread);
  ASSERT_TRUE(placed.has_value());
  EXPECT_FALSE(placed->placed());
  EXPECT_THAT(placed->reason, HasSubstr("1 whole GPU on one node + 4.5 vCPUs"));
  EXPECT_THAT(placed->reason, HasSubstr("most free on those nodes: 4 vCPUs"));
}

}  // namespace
}  // namespace carve::core
