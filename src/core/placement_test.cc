#include "core/placement.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/fleet_builders.h"
#include "core/fleet_fixtures.h"

namespace carve::core {
namespace {

using fixtures::Cards;
using fixtures::Node;

PlacementEngine Engine(std::vector<NodeSpec> nodes, FleetOptions options = {}) {
  auto e = PlacementEngine::Create(std::move(nodes), options);
  EXPECT_TRUE(e.has_value()) << e.error().message;
  return std::move(e).value();
}

// Two nodes of 2 A10G mGPU cards each, 32 vCPUs and 128 GiB host memory.
PlacementEngine TwoMgpuNodes(FleetOptions options = {}) {
  return Engine({Node("a", 32, 131072, Cards(2, "a10g", GpuMode::kMgpu)),
                 Node("b", 32, 131072, Cards(2, "a10g", GpuMode::kMgpu))},
                options);
}

Request ShareOf(int core, std::optional<int64_t> memory, int vcpus = 0, int64_t host = 0) {
  return Request::Share(ValidateShare(core, memory).value(), int64_t{vcpus} * 1000, host);
}

Placement MustPlace(PlacementEngine& e, const Request& r, int copies, Strategy s) {
  auto p = e.Place(r, copies, s);
  EXPECT_TRUE(p.has_value()) << p.error().message;
  return p.has_value() ? std::move(p).value() : Placement{};
}

std::string NodeOf(const PlacementEngine& e, AllocationId id) { return e.Describe(id)->node; }
int GpuOf(const PlacementEngine& e, AllocationId id) { return e.Describe(id)->gpu_indexes[0]; }

TEST(PlacementEngine, BinpackFillsOneNodeBeforeTheNext) {
  auto e = TwoMgpuNodes();
  Placement p = MustPlace(e, ShareOf(30, 1000), 4, Strategy::kBinpack);
  ASSERT_TRUE(p.placed()) << p.reason;
  for (AllocationId id : p.allocations) {
    EXPECT_EQ(NodeOf(e, id), NodeOf(e, p.allocations[0]));
  }
  // The header's example: cards 0,0,0,1.
  std::vector<int> cards;
  for (AllocationId id : p.allocations) {
    cards.push_back(GpuOf(e, id));
  }
  EXPECT_EQ(cards, (std::vector<int>{0, 0, 0, 1}));
}

TEST(PlacementEngine, SpreadAlternatesNodesAndCards) {
  auto e = TwoMgpuNodes();
  Placement p = MustPlace(e, ShareOf(30, 1000), 4, Strategy::kSpread);
  ASSERT_TRUE(p.placed()) << p.reason;
  std::map<std::string, std::vector<int>> cards_by_node;
  for (AllocationId id : p.allocations) {
    cards_by_node[NodeOf(e, id)].push_back(GpuOf(e, id));
  }
  ASSERT_EQ(cards_by_node.size(), 2u);
  for (auto& [node, cards] : cards_by_node) {
    EXPECT_EQ(cards, (std::vector<int>{0, 1})) << node;
  }
}

TEST(PlacementEngine, SpreadPutsWholeGpuCopiesOnDifferentNodesAndBinpackOnOne) {
  auto spread = Engine({Node("a", 96, 1 << 20, Cards(4, "a10g", GpuMode::kWhole)),
                        Node("b", 96, 1 << 20, Cards(4, "a10g", GpuMode::kWhole))});
  Placement s = MustPlace(spread, Request::WholeGpus(1), 2, Strategy::kSpread);
  ASSERT_TRUE(s.placed()) << s.reason;
  EXPECT_NE(NodeOf(spread, s.allocations[0]), NodeOf(spread, s.allocations[1]));

  auto binpack = Engine({Node("a", 96, 1 << 20, Cards(4, "a10g", GpuMode::kWhole)),
                         Node("b", 96, 1 << 20, Cards(4, "a10g", GpuMode::kWhole))});
  Placement b = MustPlace(binpack, Request::WholeGpus(1), 2, Strategy::kBinpack);
  ASSERT_TRUE(b.placed()) << b.reason;
  EXPECT_EQ(NodeOf(binpack, b.allocations[0]), NodeOf(binpack, b.allocations[1]));
}

TEST(PlacementEngine, PlacesMigPartitionsOfTheSeedLayoutAndTakesTheSageMakerSpelling) {
  auto node =
      NodeFromInstanceType("p4d-0", "ml.p4d.24xlarge", GpuMode::kMig, fixtures::SeedA100Layout());
  ASSERT_TRUE(node.has_value()) << node.error().message;
  auto e = Engine({*node});
  // The seed: an ml.p4d.24xlarge carved [4g.20gb, 2g.10gb, 1g.5gb] has 8 partitions of each.
  Placement p = MustPlace(e, Request::Partition("mig-1g.5gb"), 8, Strategy::kSpread);
  ASSERT_TRUE(p.placed()) << p.reason;
  std::set<int> gpus;
  for (AllocationId id : p.allocations) {
    auto rec = e.Describe(id);
    EXPECT_EQ(rec->profile, "1g.5gb");
    EXPECT_EQ(rec->partition_start, 6);
    gpus.insert(rec->gpu_indexes[0]);
  }
  EXPECT_EQ(gpus.size(), 8u);
  Placement ninth = MustPlace(e, Request::Partition("1g.5gb"), 1, Strategy::kSpread);
  EXPECT_FALSE(ninth.placed());
}

TEST(PlacementEngine, BinpackPutsPartitionsOnTheFullestGpu) {
  auto e = Engine(
      {Node("n", 96, 1 << 20, Cards(2, "a100-40gb", GpuMode::kMig, fixtures::SeedA100Layout()))});
  Placement first = MustPlace(e, Request::Partition("4g.20gb"), 1, Strategy::kBinpack);
  Placement second = MustPlace(e, Request::Partition("2g.10gb"), 1, Strategy::kBinpack);
  ASSERT_TRUE(first.placed() && second.placed());
  EXPECT_EQ(GpuOf(e, first.allocations[0]), GpuOf(e, second.allocations[0]));
}

TEST(PlacementEngine, FailedPlacementLeavesNothingBehind) {
  auto e = TwoMgpuNodes();
  ASSERT_TRUE(MustPlace(e, ShareOf(50, 1000), 1, Strategy::kBinpack).placed());
  auto gpus_before = e.Gpus();
  auto records_before = e.Allocations();
  // 4 cards, one half used: room for 7 copies of 50%, not 8.
  Placement p = MustPlace(e, ShareOf(50, 1000), 8, Strategy::kSpread);
  EXPECT_FALSE(p.placed());
  EXPECT_TRUE(p.allocations.empty());
  EXPECT_EQ(e.Gpus(), gpus_before);
  EXPECT_EQ(e.Allocations(), records_before);
  EXPECT_EQ(e.live_allocations(), 1);
  EXPECT_NE(p.reason.find("asked for 8 copies of mGPU share core=50% memory=1000 MiB"),
            std::string::npos)
      << p.reason;
  EXPECT_NE(p.reason.find("GPU room for 7 copies on 2 nodes"), std::string::npos) << p.reason;
}

TEST(PlacementEngine, ReleaseReturnsCapacity) {
  auto e = TwoMgpuNodes();
  Placement all = MustPlace(e, ShareOf(100, std::nullopt), 4, Strategy::kBinpack);
  ASSERT_TRUE(all.placed()) << all.reason;
  EXPECT_FALSE(MustPlace(e, ShareOf(5, 256), 1, Strategy::kBinpack).placed());
  ASSERT_TRUE(e.Release(all.allocations[2]).ok());
  EXPECT_EQ(e.live_allocations(), 3);
  Placement again = MustPlace(e, ShareOf(60, 256), 1, Strategy::kBinpack);
  EXPECT_TRUE(again.placed()) << again.reason;
}

TEST(PlacementEngine, ReleaseOfAnUnknownOrReleasedIdIsNotFound) {
  auto e = TwoMgpuNodes();
  Placement p = MustPlace(e, ShareOf(30, 1000), 1, Strategy::kBinpack);
  ASSERT_TRUE(e.Release(p.allocations[0]).ok());
  Status twice = e.Release(p.allocations[0]);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(e.Release(AllocationId(12345)).error().code, ErrorCode::kNotFound);
  // A new allocation in the same slot gets a different id.
  Placement q = MustPlace(e, ShareOf(30, 1000), 1, Strategy::kBinpack);
  EXPECT_NE(q.allocations[0], p.allocations[0]);
}

TEST(PlacementEngine, AnUnschedulableNodeGetsNothingNewAndKeepsWhatItHas) {
  auto e = TwoMgpuNodes();
  Placement first = MustPlace(e, ShareOf(50, 1000), 1, Strategy::kBinpack);
  ASSERT_TRUE(first.placed()) << first.reason;
  const std::string held = NodeOf(e, first.allocations[0]);
  const std::string other = held == "a" ? "b" : "a";
  ASSERT_TRUE(e.SetSchedulable(held, false).ok());
  EXPECT_FALSE(e.schedulable(held));
  // BINPACK would pick the fuller node; it is out, so everything goes to the other one.
  Placement more = MustPlace(e, ShareOf(50, 1000), 4, Strategy::kBinpack);
  ASSERT_TRUE(more.placed()) << more.reason;
  for (AllocationId id : more.allocations) EXPECT_EQ(NodeOf(e, id), other);
  Placement none = MustPlace(e, ShareOf(50, 1000), 1, Strategy::kBinpack);
  ASSERT_FALSE(none.placed());
  EXPECT_NE(none.reason.find("1 node with room is not schedulable"), std::string::npos)
      << none.reason;
  EXPECT_TRUE(e.Release(first.allocations[0]).ok()) << "its allocations can still be released";
  ASSERT_TRUE(e.SetSchedulable(held, true).ok());
  EXPECT_TRUE(MustPlace(e, ShareOf(50, 1000), 1, Strategy::kBinpack).placed());
  EXPECT_EQ(e.SetSchedulable("nope", false).error().code, ErrorCode::kNotFound);
}

TEST(PlacementEngine, SixteenWorkersFitOnACardButNotASeventeenth) {
  auto e = Engine({Node("n", 64, 1 << 20, Cards(1, "a10g", GpuMode::kMgpu))});
  Placement sixteen = MustPlace(e, ShareOf(5, 256), 16, Strategy::kBinpack);
  ASSERT_TRUE(sixteen.placed()) << sixteen.reason;
  EXPECT_EQ(e.Gpus()[0].workers, 16);
  EXPECT_EQ(e.Gpus()[0].core_used, 80);
  Placement seventeenth = MustPlace(e, ShareOf(5, 256), 1, Strategy::kBinpack);
  EXPECT_FALSE(seventeenth.placed());
  EXPECT_NE(seventeenth.reason.find("no GPU capacity for even one copy"), std::string::npos)
      << seventeenth.reason;
}

// BINPACK prefers the card with the least free core, but a card with 16 workers is full whatever
// core it has left: the next share goes to the other card.
TEST(PlacementEngine, BinpackPassesOverTheFullestCardOnceItHasSixteenWorkers) {
  auto e = Engine({Node("n", 64, 1 << 20, Cards(2, "a10g", GpuMode::kMgpu))});
  ASSERT_TRUE(MustPlace(e, ShareOf(5, 256), 16, Strategy::kBinpack).placed());
  ASSERT_EQ(e.Gpus()[0].workers, 16);
  ASSERT_EQ(e.Gpus()[0].core_used, 80);
  Placement next = MustPlace(e, ShareOf(5, 256), 1, Strategy::kBinpack);
  ASSERT_TRUE(next.placed()) << next.reason;
  EXPECT_EQ(e.Describe(next.allocations[0])->gpu_indexes, (std::vector<int>{1}));
  EXPECT_EQ(e.Gpus()[0].workers, 16);
  EXPECT_EQ(e.Gpus()[1].workers, 1);
}

TEST(PlacementEngine, CoreSumsToExactlyOneHundredOnACard) {
  auto e = Engine({Node("n", 64, 1 << 20, Cards(1, "a10g", GpuMode::kMgpu))});
  ASSERT_TRUE(MustPlace(e, ShareOf(30, 1000), 2, Strategy::kBinpack).placed());
  ASSERT_TRUE(MustPlace(e, ShareOf(40, 1000), 1, Strategy::kBinpack).placed());
  EXPECT_EQ(e.Gpus()[0].core_used, 100);
  EXPECT_FALSE(MustPlace(e, ShareOf(5, 256), 1, Strategy::kBinpack).placed());
}

TEST(PlacementEngine, CardMemoryLessTheReserveBoundsShares) {
  const int64_t card = fixtures::Gpu("a10g")->memory_mib;
  auto e = Engine({Node("n", 64, 1 << 20, Cards(1, "a10g", GpuMode::kMgpu))},
                  FleetOptions{.mgpu_reserved_memory_mib = 1024});
  const int64_t half = (card - 1024) / 2;
  ASSERT_TRUE(MustPlace(e, ShareOf(10, half), 2, Strategy::kBinpack).placed());
  Placement more = MustPlace(e, ShareOf(10, 256), 1, Strategy::kBinpack);
  EXPECT_EQ(more.placed(), (card - 1024) - 2 * half >= 256);
  EXPECT_FALSE(more.placed());
}

TEST(PlacementEngine, AShareWithoutMemoryTakesMemoryInProportionToCore) {
  auto e = Engine({Node("n", 64, 1 << 20, Cards(1, "a10g", GpuMode::kMgpu))});
  Placement p = MustPlace(e, ShareOf(25, std::nullopt), 1, Strategy::kBinpack);
  ASSERT_TRUE(p.placed());
  EXPECT_EQ(e.Describe(p.allocations[0])->memory_mib, fixtures::Gpu("a10g")->memory_mib / 4);
}

TEST(PlacementEngine, HostCpuLimitsCopiesPerNode) {
  auto e = Engine({Node("small", 8, 1 << 20, Cards(4, "a10g", GpuMode::kWhole)),
                   Node("big", 64, 1 << 20, Cards(1, "a10g", GpuMode::kWhole))});
  // BINPACK prefers "big" (1 free GPU) first, then "small" takes two at 4 vCPUs each.
  Placement p = MustPlace(e, Request::WholeGpus(1, 4000, 0), 3, Strategy::kBinpack);
  ASSERT_TRUE(p.placed()) << p.reason;
  Placement q = MustPlace(e, Request::WholeGpus(1, 4000, 0), 1, Strategy::kBinpack);
  EXPECT_FALSE(q.placed());
  EXPECT_NE(q.reason.find("GPU room for 2 copies on 1 node, of which the nodes' free host CPU and "
                          "memory allow 0 (most free on those nodes: 0 vCPUs"),
            std::string::npos)
      << q.reason;
}

TEST(PlacementEngine, HostMemoryLimitsCopiesPerNode) {
  auto e = Engine({Node("n", 64, 10000, Cards(4, "a10g", GpuMode::kMgpu))});
  EXPECT_TRUE(MustPlace(e, ShareOf(10, 256, 1, 5000), 2, Strategy::kSpread).placed());
  EXPECT_FALSE(MustPlace(e, ShareOf(10, 256, 1, 1), 1, Strategy::kSpread).placed());
}

TEST(PlacementEngine, WholeGpuCopiesTakeKGpusOnOneNode) {
  auto e = Engine({Node("a", 96, 1 << 20, Cards(4, "a10g", GpuMode::kWhole)),
                   Node("b", 96, 1 << 20, Cards(4, "a10g", GpuMode::kWhole))});
  EXPECT_FALSE(MustPlace(e, Request::WholeGpus(5), 1, Strategy::kBinpack).placed());
  Placement p = MustPlace(e, Request::WholeGpus(3), 2, Strategy::kBinpack);
  ASSERT_TRUE(p.placed()) << p.reason;
  EXPECT_NE(NodeOf(e, p.allocations[0]), NodeOf(e, p.allocations[1]));
  EXPECT_EQ(e.Describe(p.allocations[0])->gpu_indexes, (std::vector<int>{0, 1, 2}));
  // 2 GPUs are free, one on each node: no node has 2.
  EXPECT_FALSE(MustPlace(e, Request::WholeGpus(2), 1, Strategy::kBinpack).placed());
}

TEST(PlacementEngine, AWholeCardShareTakesOnlyIdleCards) {
  auto e = Engine({Node("n", 64, 1 << 20, Cards(3, "a10g", GpuMode::kMgpu))});
  ASSERT_TRUE(MustPlace(e, ShareOf(5, 256), 1, Strategy::kBinpack).placed());
  Placement two = MustPlace(e, ShareOf(200, std::nullopt), 1, Strategy::kBinpack);
  ASSERT_TRUE(two.placed()) << two.reason;
  EXPECT_EQ(e.Describe(two.allocations[0])->gpu_indexes, (std::vector<int>{1, 2}));
  EXPECT_FALSE(MustPlace(e, ShareOf(100, std::nullopt), 1, Strategy::kBinpack).placed());
  EXPECT_FALSE(MustPlace(e, ShareOf(5, 256), 16, Strategy::kBinpack).placed());
  EXPECT_TRUE(MustPlace(e, ShareOf(5, 256), 15, Strategy::kBinpack).placed());
}

TEST(PlacementEngine, ResolveRejectsInvalidRequestsAsErrors) {
  auto e = Engine(
      {Node("n", 96, 1 << 20, Cards(1, "a100-40gb", GpuMode::kMig, fixtures::SeedA100Layout()))});
  auto unknown = e.Resolve(Request::Partition("mig-3g.20gb"));
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  EXPECT_NE(unknown.error().message.find("carved profiles: [4g.20gb, 2g.10gb, 1g.5gb]"),
            std::string::npos)
      << unknown.error().message;
  Request bad_share = Request::Share(MgpuShare{150, std::nullopt});
  EXPECT_EQ(e.Resolve(bad_share).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.Resolve(Request::WholeGpus(0)).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.Place(Request::WholeGpus(1), 0, Strategy::kSpread).error().code,
            ErrorCode::kInvalidArgument);
}

TEST(PlacementEngine, CreateRejectsUnusableFleets) {
  auto dup = PlacementEngine::Create({Node("a", 1, 1, {}), Node("a", 1, 1, {})});
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.error().message.find("node name 'a' appears twice"), std::string::npos);
  auto big = PlacementEngine::Create({Node("a", 1, 1, Cards(17, "a10g", GpuMode::kWhole))});
  ASSERT_FALSE(big.has_value());
  EXPECT_NE(big.error().message.find("17 GPUs; at most 16"), std::string::npos);
  auto reserve = PlacementEngine::Create({Node("a", 1, 1, Cards(1, "a10g", GpuMode::kMgpu))},
                                         FleetOptions{.mgpu_reserved_memory_mib = 24500});
  EXPECT_FALSE(reserve.has_value());
}

TEST(PlacementEngine, RestoreRebuildsTheStateFromPersistedRecords) {
  auto make_nodes = [] {
    return std::vector<NodeSpec>{
        Node("mig", 96, 1 << 20, Cards(2, "a100-40gb", GpuMode::kMig, fixtures::SeedA100Layout())),
        Node("mgpu", 32, 131072, Cards(2, "a10g", GpuMode::kMgpu)),
        Node("whole", 32, 131072, Cards(2, "a10g", GpuMode::kWhole))};
  };
  auto e = Engine(make_nodes());
  ASSERT_TRUE(
      MustPlace(e, Request::Partition("2g.10gb", 2000, 100), 2, Strategy::kSpread).placed());
  ASSERT_TRUE(MustPlace(e, ShareOf(30, 1000, 1, 10), 3, Strategy::kBinpack).placed());
  ASSERT_TRUE(MustPlace(e, ShareOf(100, std::nullopt), 1, Strategy::kBinpack).placed());
  Placement whole = MustPlace(e, Request::WholeGpus(2, 4000, 4096), 1, Strategy::kBinpack);
  ASSERT_TRUE(whole.placed());
  ASSERT_TRUE(e.Release(whole.allocations[0]).ok());
  ASSERT_TRUE(MustPlace(e, Request::WholeGpus(1, 4000, 4096), 1, Strategy::kBinpack).placed());
  std::vector<AllocationRecord> persisted = e.Allocations();

  auto rebuilt = Engine(make_nodes());
  for (const AllocationRecord& rec : persisted) {
    Status s = rebuilt.Restore(rec);
    ASSERT_TRUE(s.ok()) << s.error().message;
  }
  EXPECT_EQ(rebuilt.Allocations(), persisted);
  EXPECT_EQ(rebuilt.Gpus(), e.Gpus());
  // New ids never collide with restored ones.
  Placement next = MustPlace(rebuilt, Request::WholeGpus(1), 1, Strategy::kBinpack);
  ASSERT_TRUE(next.placed());
  for (const AllocationRecord& rec : persisted) {
    EXPECT_NE(rec.id, next.allocations[0]);
  }
  // Restoring twice, or onto taken capacity, fails and changes nothing.
  auto gpus = rebuilt.Gpus();
  EXPECT_EQ(rebuilt.Restore(persisted[0]).error().code, ErrorCode::kAlreadyExists);
  AllocationRecord clash = persisted[0];
  clash.id = AllocationId((uint64_t{999} << 24) | 77);
  EXPECT_EQ(rebuilt.Restore(clash).error().code, ErrorCode::kFailedPrecondition);
  AllocationRecord nowhere = persisted[0];
  nowhere.id = AllocationId((uint64_t{999} << 24) | 78);
  nowhere.node = "gone";
  EXPECT_EQ(rebuilt.Restore(nowhere).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(rebuilt.Gpus(), gpus);
}

TEST(ParseStrategy, AcceptsSageMakerSpellingsAndNamesTheChoicesOtherwise) {
  EXPECT_EQ(ParseStrategy("SPREAD").value(), Strategy::kSpread);
  EXPECT_EQ(ParseStrategy("binpack").value(), Strategy::kBinpack);
  auto bad = ParseStrategy("RANDOM");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, "placement strategy 'RANDOM': must be SPREAD or BINPACK");
}

}  // namespace
}  // namespace carve::core
