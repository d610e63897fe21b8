// ComponentPlacement over a FakeStore, in simulated mode (no registry: a placed copy serves), with
// explicit passes: where copies go, what is written, and that memory follows the Store.
#include "server/sagemaker/component_placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "common/fake_clock.h"
#include "server/sagemaker/resources.h"
#include "store/fake_store.h"

namespace carve::server::sagemaker {
namespace {

using ::testing::HasSubstr;
constexpr char kAccount[] = "111111111111";

class ComponentPlacementTest : public ::testing::Test {
 protected:
  ComponentPlacementTest() {
    for (const char* n : {"p4d-0", "p4d-1"}) {
      EXPECT_TRUE(claims_.Upsert(NodeId(n), "ml.p4d.24xlarge", true).ok());
    }
    EXPECT_TRUE(claims_
                    .ClaimSpecific(nodes::Owner::Endpoint(kAccount, "ep", "AllTraffic"),
                                   std::vector<NodeId>{NodeId("p4d-0"), NodeId("p4d-1")})
                    .ok());
    VariantSpec v;
    v.name = "AllTraffic";
    v.instance_type = "ml.p4d.24xlarge";
    v.instance_count = 2;
    v.partition_types = std::vector<std::string>{"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"};
    v.layout_entries = 1;
    v.layout = CheckVariantLayout(v).value();
    v.nodes = {"p4d-0", "p4d-1"};
    EndpointRecord ep;
    ep.name = "ep";
    ep.config_name = "ep";
    ep.status = EndpointStatus::kInService;
    ep.variants = {v};
    auto rec = store_.Create({kAccount, std::string(kEndpoint), "ep"}, ep.ToJson().dump());
    endpoints_.push_back({rec.value(), ep});
  }

  void AddComponent(const std::string& name, const std::string& type, int copies) {
    ComponentRecord c;
    c.name = name;
    c.endpoint = "ep";
    c.variant = "AllTraffic";
    c.partition_type = type;
    c.cpu_milli = 1000;
    c.memory_mib = 1024;
    c.desired = copies;
    auto rec = store_.Create({kAccount, std::string(kInferenceComponent), name}, c.ToJson().dump());
    ASSERT_TRUE(rec.has_value());
  }
  void SetDesired(const std::string& name, int copies) {
    auto rec = store_.Get({kAccount, std::string(kInferenceComponent), name}).value();
    ComponentRecord c = ComponentRecord::FromRecord(rec).value();
    c.desired = copies;
    ASSERT_TRUE(store_.Update(rec.key, c.ToJson().dump(), rec.version).has_value());
  }
  std::vector<ComponentEntry> Components() {
    std::vector<ComponentEntry> out;
    const auto records = store_.ListAllAccounts(std::string(kInferenceComponent)).value();
    for (auto& r : records) {
      out.push_back({r, ComponentRecord::FromRecord(r).value()});
    }
    return out;
  }
  void Pass(ComponentPlacement& p) {
    auto components = Components();
    p.SyncPools(endpoints_, claims_, PassChanges{});
    p.Reconcile(endpoints_, components, PassChanges{});
  }
  void Pass() { Pass(placement_); }
  std::vector<CopyRecord> StoredCopies() {
    std::vector<CopyRecord> out;
    const auto records = store_.ListAllAccounts(std::string(kInferenceComponentCopy)).value();
    for (auto& r : records) {
      out.push_back(CopyRecord::FromRecord(r).value());
    }
    return out;
  }
  ComponentRecord Stored(const std::string& name) {
    return ComponentRecord::FromRecord(
               store_.Get({kAccount, std::string(kInferenceComponent), name}).value())
        .value();
  }
  int FreePartitions(const ComponentPlacement& p) {
    int free = 0;
    const nodes::NodePool* pool = p.PoolOf(nodes::Owner::Endpoint(kAccount, "ep", "AllTraffic"));
    for (const auto& part : pool->engine().Partitions()) free += part.allocation.value() == 0;
    return free;
  }

  FakeClock clock_;
  store::FakeStore store_{clock_};
  nodes::NodeClaims claims_;
  std::vector<EndpointEntry> endpoints_;
  ComponentPlacement placement_{store_, nullptr, clock_};
};

TEST_F(ComponentPlacementTest, EachCopyGetsAPartitionOfItsTypeAndARecordNamingProfileAndStart) {
  AddComponent("g", "mig-1g.5gb", 3);
  Pass();
  auto copies = StoredCopies();
  ASSERT_EQ(copies.size(), 3u);
  std::set<int> indexes;
  for (const auto& c : copies) {
    EXPECT_EQ(c.component, "g");
    EXPECT_EQ(c.placement.kind, core::RequestKind::kPartition);
    EXPECT_EQ(c.placement.profile, "1g.5gb");
    EXPECT_EQ(c.placement.partition_start, 6);
    EXPECT_EQ(c.placement.cpu_milli, 1000);
    EXPECT_EQ(c.id.size(), 12u);
    indexes.insert(c.index);
  }
  EXPECT_EQ(indexes, (std::set<int>{0, 1, 2}));
  ComponentRecord g = Stored("g");
  EXPECT_EQ(g.running, 3);
  EXPECT_EQ(g.status, ComponentStatus::kInService);
  EXPECT_EQ(placement_.CopiesOf(kAccount, "g").size(), 3u);
}

// On a store that takes few keys per transaction (etcd takes 128) a pass writes at most that
// many copy records: a large component is placed, and lowered, over several passes.
TEST_F(ComponentPlacementTest, CopiesArePlacedAndReleasedWithinTheStoresTransactionLimit) {
  AddComponent("g", "mig-1g.5gb", 10);
  store_.set_max_commit_keys(5);  // The component's record and 4 copies.
  Pass();
  EXPECT_EQ(StoredCopies().size(), 4u);
  EXPECT_THAT(Stored("g").status_message, HasSubstr("placing at most 4 copies a pass"));
  Pass();
  Pass();
  EXPECT_EQ(StoredCopies().size(), 10u);
  EXPECT_EQ(Stored("g").status, ComponentStatus::kInService);
  SetDesired("g", 1);
  Pass();
  EXPECT_EQ(StoredCopies().size(), 6u);
  Pass();
  Pass();
  EXPECT_EQ(StoredCopies().size(), 1u);
  EXPECT_EQ(FreePartitions(placement_), 48 - 1);
}

TEST_F(ComponentPlacementTest, SpreadPutsCopiesOnBothInstances) {
  AddComponent("g", "mig-4g.20gb", 2);
  Pass();
  std::set<std::string> nodes;
  for (const auto& c : StoredCopies()) nodes.insert(c.placement.node);
  EXPECT_EQ(nodes, (std::set<std::string>{"p4d-0", "p4d-1"}));
}

TEST_F(ComponentPlacementTest, CopiesThatDoNotFitWaitAndSayForWhat) {
  AddComponent("g", "mig-4g.20gb", 17);
  Pass();
  ComponentRecord g = Stored("g");
  EXPECT_EQ(StoredCopies().size(), 16u);
  EXPECT_EQ(g.status, ComponentStatus::kCreating);
  EXPECT_THAT(g.status_message,
              HasSubstr("1 of 17 copies are not placed: waiting for a mig-4g.20gb partition"));
}

TEST_F(ComponentPlacementTest, LoweringTheCountReleasesTheHighestNumbersFirst) {
  AddComponent("g", "mig-2g.10gb", 4);
  Pass();
  SetDesired("g", 2);
  Pass();
  std::set<int> left;
  for (const auto& c : StoredCopies()) left.insert(c.index);
  EXPECT_EQ(left, (std::set<int>{0, 1}));
  EXPECT_EQ(FreePartitions(placement_), 48 - 2);
  EXPECT_EQ(Stored("g").status, ComponentStatus::kInService);
}

TEST_F(ComponentPlacementTest, ACopyOnANodeThatStoppedReportingIsPlacedAgainElsewhere) {
  AddComponent("g", "mig-4g.20gb", 2);
  Pass();
  std::string on_lost;
  for (const auto& c : StoredCopies()) {
    if (c.placement.node == "p4d-0") on_lost = c.id;
  }
  ASSERT_FALSE(on_lost.empty());
  ASSERT_TRUE(claims_.Upsert(NodeId("p4d-0"), "ml.p4d.24xlarge", false).ok());
  Pass();
  auto copies = StoredCopies();
  ASSERT_EQ(copies.size(), 2u);
  for (const auto& c : copies) {
    EXPECT_EQ(c.placement.node, "p4d-1");
    EXPECT_NE(c.id, on_lost);  // A new placement is a new copy id: the old process is stopped.
  }
}

TEST_F(ComponentPlacementTest, AFailedCommitLeavesMemoryAsTheStoreHasIt) {
  AddComponent("g", "mig-1g.5gb", 5);
  store_.FailNthCommit(1, Unavailable("disk"));
  Pass();
  EXPECT_TRUE(StoredCopies().empty());
  EXPECT_TRUE(placement_.CopiesOf(kAccount, "g").empty());
  EXPECT_EQ(FreePartitions(placement_), 48);
  Pass();  // The next pass tries again.
  EXPECT_EQ(StoredCopies().size(), 5u);
  EXPECT_EQ(FreePartitions(placement_), 48 - 5);
}

TEST_F(ComponentPlacementTest, ARestartFindsEveryCopyOnThePartitionItHad) {
  AddComponent("a", "mig-4g.20gb", 3);
  AddComponent("b", "mig-1g.5gb", 5);
  Pass();
  std::map<std::string, std::tuple<std::string, std::vector<int>, int>> before;
  for (const auto& c : StoredCopies()) {
    before[c.id] = {c.placement.node, c.placement.gpu_indexes, c.placement.partition_start};
  }
  ComponentPlacement restarted(store_, nullptr, clock_);
  auto components = Components();
  ASSERT_TRUE(restarted.Recover(endpoints_, components).ok());
  restarted.SyncPools(endpoints_, claims_, PassChanges{});
  EXPECT_EQ(FreePartitions(restarted), 48 - 8);
  for (const auto* name : {"a", "b"}) {
    for (const auto& live : restarted.CopiesOf(kAccount, name)) {
      ASSERT_NE(live.allocation.value(), 0u);
      const auto& owner = nodes::Owner::Endpoint(kAccount, "ep", "AllTraffic");
      auto held = restarted.PoolOf(owner)->engine().Describe(live.allocation).value();
      EXPECT_EQ(std::make_tuple(held.node, held.gpu_indexes, held.partition_start),
                before.at(live.record.id));
    }
  }
  Pass(restarted);  // Nothing to change.
  EXPECT_EQ(StoredCopies().size(), 8u);
}

TEST_F(ComponentPlacementTest, DeletingReleasesCopiesThenRemovesTheRecord) {
  AddComponent("g", "mig-2g.10gb", 3);
  Pass();
  auto rec = store_.Get({kAccount, std::string(kInferenceComponent), "g"}).value();
  ComponentRecord c = ComponentRecord::FromRecord(rec).value();
  c.status = ComponentStatus::kDeleting;
  ASSERT_TRUE(store_.Update(rec.key, c.ToJson().dump(), rec.version).has_value());
  Pass();
  EXPECT_TRUE(StoredCopies().empty());
  EXPECT_FALSE(store_.Get({kAccount, std::string(kInferenceComponent), "g"}).has_value());
  EXPECT_EQ(FreePartitions(placement_), 48);
}

TEST_F(ComponentPlacementTest, AComponentOfAFailedEndpointFails) {
  endpoints_[0].endpoint.status = EndpointStatus::kFailed;
  endpoints_[0].endpoint.failure_reason = "carving GPU 3 of p4d-0 failed";
  AddComponent("g", "mig-1g.5gb", 1);
  Pass();
  ComponentRecord g = Stored("g");
  EXPECT_EQ(g.status, ComponentStatus::kFailed);
  EXPECT_THAT(g.failure_reason, HasSubstr("endpoint ep failed: carving GPU 3 of p4d-0 failed"));
}

TEST_F(ComponentPlacementTest, ComponentsWaitForTheirEndpointToBeCarved) {
  endpoints_[0].endpoint.status = EndpointStatus::kCreating;
  AddComponent("g", "mig-1g.5gb", 1);
  Pass();
  EXPECT_THAT(Stored("g").status_message,
              HasSubstr("waiting for endpoint ep to be InService (it is Creating)"));
  EXPECT_EQ(placement_.PoolOf(nodes::Owner::Endpoint(kAccount, "ep", "AllTraffic")), nullptr);
}

}  // namespace
}  // namespace carve::server::sagemaker
