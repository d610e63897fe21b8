#include "server/nodes/node_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "core/layout_validator.h"

namespace carve::server::nodes {
namespace {

using ::testing::HasSubstr;

core::Layout SeedLayout() {
  const catalog::GpuModel* a100 = catalog::FindGpu("a100-40gb").value();
  core::LayoutOptions o;
  o.sagemaker_rules = true;
  return core::ValidateLayout(
             *a100, std::vector<std::string>{"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"}, o)
      .value();
}

NodePool SeedPool(int nodes) {
  std::vector<PoolNode> list;
  for (int i = 0; i < nodes; ++i) list.push_back({"p4d-" + std::to_string(i), "ml.p4d.24xlarge"});
  PoolOptions o;
  o.mode = core::GpuMode::kMig;
  o.layout = SeedLayout();
  return NodePool::Create(std::move(list), std::move(o)).value();
}

TEST(NodePool, PlacesACopyOnAPartitionNamedByProfileAndStart) {
  NodePool pool = SeedPool(1);
  auto out =
      pool.PlaceOne(core::Request::Partition("mig-1g.5gb", 1000, 1024), core::Strategy::kSpread);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  ASSERT_TRUE(out->allocation.has_value()) << out->reason;
  EXPECT_EQ(out->allocation->node, "p4d-0");
  EXPECT_EQ(out->allocation->profile, "1g.5gb");
  EXPECT_EQ(out->allocation->partition_start, 6);
  EXPECT_EQ(out->allocation->cpu_milli, 1000);
}

TEST(NodePool, SaysWhyACopyDoesNotFitAsAValue) {
  NodePool pool = SeedPool(1);
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(pool.PlaceOne(core::Request::Partition("mig-4g.20gb"), core::Strategy::kSpread)
                    ->allocation);
  }
  auto out = pool.PlaceOne(core::Request::Partition("mig-4g.20gb"), core::Strategy::kSpread);
  ASSERT_TRUE(out.has_value());
  EXPECT_FALSE(out->allocation.has_value());
  EXPECT_THAT(out->reason, HasSubstr("mig-4g.20gb"));
}

TEST(NodePool, AProfileTheLayoutLacksIsAnErrorNotAWait) {
  NodePool pool = SeedPool(1);
  auto out = pool.PlaceOne(core::Request::Partition("mig-3g.20gb"), core::Strategy::kSpread);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code, ErrorCode::kNotFound);
}

TEST(NodePool, ANodeThatIsNotReadyGetsNothingNew) {
  NodePool pool = SeedPool(2);
  pool.SetReady("p4d-0", false);
  EXPECT_FALSE(pool.Ready("p4d-0"));
  for (int i = 0; i < 8; ++i) {
    auto out = pool.PlaceOne(core::Request::Partition("mig-2g.10gb"), core::Strategy::kSpread);
    ASSERT_TRUE(out->allocation);
    EXPECT_EQ(out->allocation->node, "p4d-1");
  }
  EXPECT_FALSE(
      pool.PlaceOne(core::Request::Partition("mig-2g.10gb"), core::Strategy::kSpread)->allocation);
}

TEST(NodePool, AReleasedPartitionIsPlacedAgainAndAdoptRestoresOneExactly) {
  NodePool a = SeedPool(1);
  auto first = a.PlaceOne(core::Request::Partition("mig-4g.20gb"), core::Strategy::kBinpack);
  core::AllocationRecord rec = *first->allocation;
  a.Release(rec.id);
  a.Release(rec.id);  // A second release is ignored.
  NodePool b = SeedPool(1);
  auto id = b.Adopt(rec);
  ASSERT_TRUE(id.has_value()) << id.error().message;
  EXPECT_EQ(b.engine().Describe(*id)->gpu_indexes, rec.gpu_indexes);
  EXPECT_EQ(b.engine().live_allocations(), 1);
}

TEST(NodePool, FragmentationReportsTheEnginesMetricForTheShape) {
  NodePool pool = SeedPool(1);
  const Owner scope = Owner::Endpoint("111111111111", "ep", "AllTraffic");
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        pool.PlaceOne(core::Request::Partition("mig-1g.5gb"), core::Strategy::kSpread)->allocation);
  }
  auto f = pool.Fragmentation(scope, core::Request::Partition("mig-1g.5gb"));
  ASSERT_TRUE(f.has_value()) << f.error().message;
  EXPECT_EQ(f->scope, scope);
  EXPECT_EQ(f->report.unit, "compute slices");
  EXPECT_EQ(f->report.copies, 5);  // 8 GPUs x one 1g.5gb partition, 3 taken.
  EXPECT_EQ(f->report.free, f->report.usable + f->report.stranded);
  EXPECT_THAT(f->description, HasSubstr("mig-1g.5gb"));
  EXPECT_FALSE(pool.Fragmentation(scope, core::Request::Partition("mig-7g.40gb")).has_value());
}

TEST(NodePool, AnUnknownInstanceTypeIsNotFound) {
  auto pool = NodePool::Create({{"x", "ml.nope"}}, PoolOptions{});
  ASSERT_FALSE(pool.has_value());
  EXPECT_EQ(pool.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace carve::server::nodes
