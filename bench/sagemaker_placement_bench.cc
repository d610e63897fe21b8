// The SageMaker copy-placement path (issue 13): how fast the control plane places inference-
// component copies onto an endpoint variant's carved instances, the way its reconciler does,
// one copy per call.
//
// BM_PlaceCopies/N: one variant holding N ml.p4d.24xlarge instances (8 x A100-40GB each) carved
// with the seed's layout [mig-4g.20gb, mig-2g.10gb, mig-1g.5gb]; each iteration places 1,000
// copies of mig-1g.5gb (1 vCPU, 1024 MiB host memory each) with SPREAD, then releases them.
// The counter `placements_per_s` is copies placed per second of placement time.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <vector>

#include "server/fleet/fleet.h"

namespace carve::server::fleet {
namespace {

constexpr int kCopies = 1000;

void BM_PlaceCopies(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  FleetConfig config;
  for (int i = 0; i < nodes; ++i) {
    config.nodes.push_back({NodeId(fmt::format("node-{}", i)), "ml.p4d.24xlarge"});
  }
  Fleet fleet = Fleet::Create(config).value();
  const Claim claim{"111111111111", "ep", "AllTraffic"};
  auto ids = fleet.ClaimNodes(claim, "ml.p4d.24xlarge", nodes).value();
  const std::vector<std::string> layout = {"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"};
  for (const auto& id : ids) (void)fleet.SetCarve(id, layout);
  CopyRequest r{"111111111111/ic", "mig-1g.5gb", 1, 1000, 1024, PlacementStrategy::kSpread};
  std::vector<CopyPlacement> placed;
  placed.reserve(kCopies);
  for (auto _ : state) {
    for (int i = 0; i < kCopies; ++i) {
      PlaceOutcome out = fleet.Place(claim, r);
      if (!out.placement) {
        state.SkipWithError(out.reason.c_str());
        return;
      }
      placed.push_back(*out.placement);
    }
    state.PauseTiming();
    for (const auto& p : placed) fleet.Release(p);
    placed.clear();
    state.ResumeTiming();
  }
  state.counters["placements_per_s"] = benchmark::Counter(
      static_cast<double>(kCopies), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PlaceCopies)->Arg(125)->Arg(1250)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace carve::server::fleet
