// The SageMaker copy-placement path (issue 13): how fast the control plane places inference-
// component copies onto an endpoint variant's carved instances, the way its reconciler does,
// one copy per call.
//
// BM_PlaceCopies/N: one variant holding N ml.p4d.24xlarge instances (8 x A100-40GB each) carved
// with the seed's layout [mig-4g.20gb, mig-2g.10gb, mig-1g.5gb]; each iteration places 1,000
// copies of mig-1g.5gb (1 vCPU, 1024 MiB host memory each) with SPREAD, then releases them.
// The counter `placements_per_s` is copies placed per second of placement time.
//
// Since issue 13 the path is the variant's nodes::NodePool (the core placement engine); before
// it, the service's own fleet model (server/fleet, commit 812d5b7 has that version of this file).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <vector>

#include "catalog/catalog.h"
#include "core/layout_validator.h"
#include "server/nodes/node_pool.h"

namespace carve::server::nodes {
namespace {

constexpr int kCopies = 1000;

void BM_PlaceCopies(benchmark::State& state) {
  const int count = static_cast<int>(state.range(0));
  std::vector<PoolNode> nodes;
  for (int i = 0; i < count; ++i) nodes.push_back({fmt::format("node-{}", i), "ml.p4d.24xlarge"});
  core::LayoutOptions layout_options;
  layout_options.sagemaker_rules = true;
  PoolOptions options;
  options.mode = core::GpuMode::kMig;
  options.layout =
      core::ValidateLayout(*catalog::FindGpu("a100-40gb").value(),
                           std::vector<std::string>{"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"},
                           layout_options)
          .value();
  NodePool pool = NodePool::Create(std::move(nodes), std::move(options)).value();
  const core::Request request = core::Request::Partition("mig-1g.5gb", 1000, 1024);
  std::vector<core::AllocationId> placed;
  placed.reserve(kCopies);
  for (auto _ : state) {
    for (int i = 0; i < kCopies; ++i) {
      auto out = pool.PlaceOne(request, core::Strategy::kSpread);
      if (!out.has_value() || !out->allocation) {
        state.SkipWithError("a copy did not fit");
        return;
      }
      placed.push_back(out->allocation->id);
    }
    state.PauseTiming();
    for (auto id : placed) pool.Release(id);
    placed.clear();
    state.ResumeTiming();
  }
  state.counters["placements_per_s"] = benchmark::Counter(
      static_cast<double>(kCopies), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PlaceCopies)->Arg(125)->Arg(1250)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace carve::server::nodes
