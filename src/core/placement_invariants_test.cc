// Randomized place/release sequences on a mixed fleet, checking after every step that the
// per-shape index agrees with a full scan and that no card is over-committed.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "core/fleet_fixtures.h"
#include "core/placement.h"

namespace carve::core {
namespace {

using fixtures::Cards;
using fixtures::Node;

std::vector<NodeSpec> MixedFleet() {
  return {
      Node("mig-a", 12, 65536, Cards(2, "a100-40gb", GpuMode::kMig, fixtures::SeedA100Layout())),
      Node("mig-b", 40, 65536,
           Cards(3, "a100-40gb", GpuMode::kMig,
                 fixtures::LayoutOf("a100-40gb", {{"3g.20gb", 0}, {"3g.20gb", 4}}))),
      Node("mgpu-a", 16, 32768, Cards(2, "a10g", GpuMode::kMgpu)),
      Node("mgpu-b", 64, 262144, Cards(3, "l4", GpuMode::kMgpu)),
      Node("whole-a", 24, 131072, Cards(4, "a10g", GpuMode::kWhole)),
      Node("whole-b", 8, 131072, Cards(2, "a10g", GpuMode::kWhole))};
}

std::vector<Request> Shapes() {
  std::vector<Request> out = {Request::Partition("1g.5gb", 1000, 1024),
                              Request::Partition("3g.20gb", 2000, 4096),
                              Request::Partition("mig-4g.20gb", 4000, 8192),
                              Request::WholeGpus(1, 2000, 2048),
                              Request::WholeGpus(2, 4000, 4096),
                              Request::Share(MgpuShare{100, {}}, 1000, 1024),
                              Request::Share(MgpuShare{200, {}}, 1000, 1024)};
  for (int core : {5, 15, 30, 45}) {
    out.push_back(Request::Share(MgpuShare{core, 256 + 1000 * (core / 15)}, 1, 512));
    out.push_back(Request::Share(MgpuShare{core, {}}, 0, 0));
  }
  return out;
}

void ExpectCardsWithinLimits(const PlacementEngine& e) {
  std::map<std::pair<std::string, int>, std::pair<int, int64_t>> from_records;
  std::map<std::pair<std::string, int>, int> workers;
  for (const AllocationRecord& r : e.Allocations()) {
    if (r.kind != RequestKind::kShare || r.core_percent >= 100) {
      continue;
    }
    auto key = std::make_pair(r.node, r.gpu_indexes[0]);
    from_records[key].first += r.core_percent;
    from_records[key].second += r.memory_mib;
    ++workers[key];
  }
  for (const GpuUsage& g : e.Gpus()) {
    if (g.mode != GpuMode::kMgpu) {
      continue;
    }
    ASSERT_LE(g.core_used, 100);
    ASSERT_LE(g.memory_used_mib, g.memory_capacity_mib);
    ASSERT_LE(g.workers, 16);
    if (g.busy) {
      continue;
    }
    auto key = std::make_pair(std::string(g.node), g.index);
    ASSERT_EQ(g.core_used, from_records[key].first);
    ASSERT_EQ(g.memory_used_mib, from_records[key].second);
    ASSERT_EQ(g.workers, workers[key]);
  }
}

TEST(PlacementInvariants, IndexAgreesWithAFullScanAndCardsAreNeverOvercommitted) {
  auto created = PlacementEngine::Create(MixedFleet());
  ASSERT_TRUE(created.has_value()) << created.error().message;
  PlacementEngine e = std::move(created).value();
  const auto initial = e.Gpus();
  std::vector<ResolvedRequest> shapes;
  for (const Request& r : Shapes()) {
    shapes.push_back(e.Resolve(r).value());
  }
  std::mt19937 rng(2024);
  std::vector<AllocationId> live;
  int placed = 0;
  int refused = 0;
  for (int step = 0; step < 4000; ++step) {
    if (rng() % 3 != 0 || live.empty()) {
      const ResolvedRequest& r = shapes[rng() % shapes.size()];
      int64_t fits = e.Fragmentation(r).copies;  // Full scan, no index.
      Strategy s = (rng() % 2) != 0u ? Strategy::kSpread : Strategy::kBinpack;
      Placement p = e.Place(r, 1, s);
      ASSERT_EQ(p.placed(), fits > 0)
          << "step " << step << ": " << r.description << " " << p.reason;
      if (p.placed()) {
        live.push_back(p.allocations[0]);
        ++placed;
      } else {
        ++refused;
      }
    } else {
      size_t v = rng() % live.size();
      ASSERT_TRUE(e.Release(live[v]).ok());
      live[v] = live.back();
      live.pop_back();
    }
    ExpectCardsWithinLimits(e);
    if (HasFatalFailure()) {
      return;
    }
  }
  EXPECT_GT(placed, 500);
  EXPECT_GT(refused, 50);
  for (AllocationId id : live) {
    ASSERT_TRUE(e.Release(id).ok());
  }
  EXPECT_EQ(e.Gpus(), initial);
  EXPECT_EQ(e.live_allocations(), 0);
}

}  // namespace
}  // namespace carve::core
