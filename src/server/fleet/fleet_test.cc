#include "server/fleet/fleet.h"

#include <gtest/gtest.h>

namespace carve::server::fleet {
namespace {

const std::vector<std::string> kSeedLayout = {"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"};

Fleet MakeFleet(const std::string& yaml) {
  auto config = ParseFleetConfig(yaml);
  EXPECT_TRUE(config.has_value());
  auto fleet = Fleet::Create(*config);
  EXPECT_TRUE(fleet.has_value()) << fleet.error().message;
  return std::move(fleet).value();
}

Fleet TwoP4d() {
  return MakeFleet("fleet:\n  nodes:\n    - {instance_type: ml.p4d.24xlarge, count: 2}\n");
}

Claim EpClaim() { return {"111111111111", "ep", "AllTraffic"}; }

CopyRequest Copy(std::string type, PlacementStrategy s = PlacementStrategy::kSpread) {
  return {"111111111111/ic", std::move(type), 1, 1000, 2048, s};
}

void ClaimAndCarve(Fleet& f, int count, const std::vector<std::string>& types) {
  auto ids = f.ClaimNodes(EpClaim(), "ml.p4d.24xlarge", count);
  ASSERT_TRUE(ids.has_value()) << ids.error().message;
  for (const auto& id : *ids) ASSERT_TRUE(f.SetCarve(id, types).ok());
}

TEST(Fleet, CreatesOneStatePerNodeWithItsGpus) {
  Fleet f = MakeFleet("");
  ASSERT_EQ(f.nodes().size(), 4u);
  EXPECT_EQ(f.nodes()[0].gpus.size(), 8u);
  EXPECT_EQ(f.nodes()[2].type->id, "ml.p5.48xlarge");
}

TEST(Fleet, NotReadyNodesTakeNoNewClaimsOrCopies) {
  Fleet f = TwoP4d();
  ASSERT_TRUE(f.SetReady(f.nodes()[1].id, false));
  EXPECT_FALSE(f.SetReady(f.nodes()[1].id, false));  // No change.
  auto two = f.ClaimNodes(EpClaim(), "ml.p4d.24xlarge", 2);
  ASSERT_FALSE(two.has_value());
  EXPECT_EQ(two.error().code, ErrorCode::kUnavailable);  // Enough exist: wait, do not fail.
  EXPECT_NE(two.error().message.find("1 free instance is NotReady"), std::string::npos)
      << two.error().message;
  // A ready node claimed and carved, then lost: its slots take no copy.
  ClaimAndCarve(f, 1, kSeedLayout);
  ASSERT_TRUE(f.SetReady(f.nodes()[0].id, false));
  auto out = f.Place(EpClaim(), Copy("mig-1g.5gb"));
  EXPECT_FALSE(out.placement.has_value());
  EXPECT_NE(out.reason.find("Ready"), std::string::npos) << out.reason;
  ASSERT_TRUE(f.SetReady(f.nodes()[0].id, true));
  EXPECT_TRUE(f.Place(EpClaim(), Copy("mig-1g.5gb")).placement.has_value());
}

TEST(Fleet, AddNodeRegistersAnAgentsNodeOnce) {
  Fleet f = TwoP4d();
  ASSERT_TRUE(f.AddNode(NodeId("agent-1"), "ml.p5.48xlarge", false).ok());
  ASSERT_TRUE(f.AddNode(NodeId("agent-1"), "ml.p5.48xlarge", true).ok());  // Kept as it was.
  ASSERT_EQ(f.nodes().size(), 3u);
  EXPECT_FALSE(f.Find(NodeId("agent-1"))->ready);
  EXPECT_EQ(f.Find(NodeId("agent-1"))->gpus.size(), 8u);
  EXPECT_FALSE(f.AddNode(NodeId("x"), "ml.nope.1xlarge", true).ok());
}

TEST(Fleet, RejectsAnInstanceTypeTheCatalogDoesNotKnow) {
  auto config = ParseFleetConfig("fleet:\n  nodes:\n    - {instance_type: ml.nope.1xlarge}\n");
  ASSERT_TRUE(config.has_value());
  auto f = Fleet::Create(*config);
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().code, ErrorCode::kInvalidArgument);
}

TEST(Fleet, ClaimShortfallNamesWhatIsMissingAndClaimsNothing) {
  Fleet f = TwoP4d();
  auto r = f.ClaimNodes(EpClaim(), "ml.p4d.24xlarge", 3);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(r.error().message.find("Missing: 1 x ml.p4d.24xlarge"), std::string::npos)
      << r.error().message;
  EXPECT_TRUE(f.NodesOf("111111111111", "ep").empty());
}

TEST(Fleet, ClaimedNodesAreNotClaimedTwice) {
  Fleet f = TwoP4d();
  ASSERT_TRUE(f.ClaimNodes(EpClaim(), "ml.p4d.24xlarge", 2).has_value());
  auto r = f.ClaimNodes({"111111111111", "other", "v"}, "ml.p4d.24xlarge", 1);
  EXPECT_FALSE(r.has_value());
}

TEST(Fleet, CarvesEveryGpuOfTheNodeIdentically) {
  Fleet f = TwoP4d();
  ClaimAndCarve(f, 1, kSeedLayout);
  const NodeState& n = f.nodes()[0];
  ASSERT_TRUE(n.carved);
  for (const auto& g : n.gpus) {
    ASSERT_EQ(g.slots.size(), 3u);
    EXPECT_EQ(g.slots[0].type, "mig-4g.20gb");
    EXPECT_EQ(g.slots[2].type, "mig-1g.5gb");
  }
}

TEST(Fleet, EachCopyTakesOnePartitionAndExtraCopiesWaitWithAReason) {
  Fleet f = TwoP4d();
  ClaimAndCarve(f, 1, kSeedLayout);
  for (int i = 0; i < 8; ++i) {
    auto p = f.Place(EpClaim(), Copy("mig-1g.5gb"));
    ASSERT_TRUE(p.placement.has_value()) << i << ": " << p.reason;
  }
  auto ninth = f.Place(EpClaim(), Copy("mig-1g.5gb"));
  EXPECT_FALSE(ninth.placement.has_value());
  EXPECT_EQ(ninth.reason,
            "waiting for a mig-1g.5gb partition: none is free on the 1 instance of variant "
            "AllTraffic");
  // The 4g partitions are untouched.
  EXPECT_TRUE(f.Place(EpClaim(), Copy("mig-4g.20gb")).placement.has_value());
}

TEST(Fleet, SpreadPutsCopiesOnDifferentGpusAndNodes) {
  Fleet f = TwoP4d();
  ClaimAndCarve(f, 2, kSeedLayout);
  auto a = f.Place(EpClaim(), Copy("mig-2g.10gb")).placement;
  auto b = f.Place(EpClaim(), Copy("mig-2g.10gb")).placement;
  auto c = f.Place(EpClaim(), Copy("mig-2g.10gb")).placement;
  ASSERT_TRUE(a && b && c);
  EXPECT_NE(a->node, b->node);
  EXPECT_NE(a->slots, c->slots);  // Third copy: back on a's node, on another GPU.
  EXPECT_EQ(a->node, c->node);
}

TEST(Fleet, BinpackFillsOneGpuAndNodeBeforeTheNext) {
  Fleet f = TwoP4d();
  ClaimAndCarve(f, 2, kSeedLayout);
  auto a = f.Place(EpClaim(), Copy("mig-4g.20gb", PlacementStrategy::kBinpack)).placement;
  auto b = f.Place(EpClaim(), Copy("mig-1g.5gb", PlacementStrategy::kBinpack)).placement;
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->node, b->node);
  EXPECT_EQ(a->slots[0].first, b->slots[0].first);  // Same GPU.
}

TEST(Fleet, HostMemoryIsAccountedPerInstance) {
  Fleet f = MakeFleet("fleet:\n  nodes:\n    - {instance_type: ml.p4d.24xlarge}\n");
  ClaimAndCarve(f, 1, kSeedLayout);
  const int64_t host_mib = f.nodes()[0].type->memory_mib;
  CopyRequest big = Copy("mig-1g.5gb");
  big.memory_mib = host_mib / 2 + 1;
  ASSERT_TRUE(f.Place(EpClaim(), big).placement.has_value());
  auto second = f.Place(EpClaim(), big);
  EXPECT_FALSE(second.placement.has_value());
  EXPECT_NE(second.reason.find("MiB memory free"), std::string::npos) << second.reason;
  EXPECT_EQ(f.nodes()[0].memory_used_mib, big.memory_mib);  // Nothing taken by the refusal.
}

TEST(Fleet, ReleaseFreesTheSlotForAWaitingCopy) {
  Fleet f = MakeFleet("fleet:\n  nodes:\n    - {instance_type: ml.p4d.24xlarge}\n");
  ClaimAndCarve(f, 1, kSeedLayout);
  std::vector<CopyPlacement> placed;
  for (int i = 0; i < 8; ++i) placed.push_back(*f.Place(EpClaim(), Copy("mig-4g.20gb")).placement);
  ASSERT_FALSE(f.Place(EpClaim(), Copy("mig-4g.20gb")).placement.has_value());
  f.Release(placed[3]);
  EXPECT_EQ(f.nodes()[0].cpu_used_milli, 7000);
  auto again = f.Place(EpClaim(), Copy("mig-4g.20gb")).placement;
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, placed[3]);
}

TEST(Fleet, WithoutALayoutACopyTakesWholeGpusOnOneInstance) {
  Fleet f = TwoP4d();
  ClaimAndCarve(f, 1, {});
  CopyRequest r = Copy("");
  r.devices = 3;
  auto p = f.Place(EpClaim(), r).placement;
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->slots.size(), 3u);
  ASSERT_TRUE(f.Place(EpClaim(), r).placement.has_value());
  auto third = f.Place(EpClaim(), r);  // 6 of 8 GPUs taken: 2 left, 3 wanted.
  EXPECT_FALSE(third.placement.has_value());
  EXPECT_NE(third.reason.find("3 whole GPUs"), std::string::npos) << third.reason;
}

TEST(Fleet, OccupyRestoresAPlacementAndRefusesATakenSlot) {
  Fleet f = TwoP4d();
  ClaimAndCarve(f, 1, kSeedLayout);
  CopyPlacement p{"c1", 0, f.nodes()[0].id, {{2, 1}}, 500, 128};
  ASSERT_TRUE(f.Occupy(p, "111111111111/a").ok());
  EXPECT_EQ(f.nodes()[0].gpus[2].slots[1].occupant, "111111111111/a");
  Status again = f.Occupy(p, "111111111111/b");
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
}

TEST(Fleet, ReleaseEndpointFreesNodesForTheNextClaim) {
  Fleet f = TwoP4d();
  ClaimAndCarve(f, 2, kSeedLayout);
  f.ReleaseEndpoint("111111111111", "ep");
  EXPECT_TRUE(f.NodesOf("111111111111", "ep").empty());
  EXPECT_FALSE(f.nodes()[0].carved);
  EXPECT_TRUE(f.ClaimNodes({"222222222222", "ep", "v"}, "ml.p4d.24xlarge", 2).has_value());
}

TEST(Fleet, PlacementsRoundTripThroughJson) {
  CopyPlacement p{"c2", 3, NodeId("n"), {{0, 1}, {3, 0}}, 250, 4096};
  auto back = PlacementFromJson(PlacementToJson(p));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, p);
  EXPECT_FALSE(PlacementFromJson(nlohmann::json{{"node", 1}}).has_value());
}

}  // namespace
}  // namespace carve::server::fleet
