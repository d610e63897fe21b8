// Placement engine benchmark (issue 2, deliverable 5).
//
// BM_PlaceRelease: a fleet of 10,000 GPUs (1,250 nodes of 8: A100 and H100 MIG nodes with mixed
// layouts, A10G and L4 mGPU nodes, H100 whole-GPU nodes) filled to about half, then 100,000
// operations, each a placement of one copy (random shape, random strategy) or the release of a
// random live allocation. Every operation is timed on its own; counters report decisions per
// second over the whole run and the latency percentiles. Single-threaded: one core.
//
// BM_Packing*: random workloads placed online with BINPACK (or SPREAD, for contrast) on an
// empty fleet, against the lower bound ceil(total demand / per-GPU capacity); `ratio` is GPUs
// (or nodes) used divided by that bound.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "core/fleet_builders.h"
#include "core/fleet_fixtures.h"
#include "core/placement.h"

namespace carve::core {
namespace {

using fixtures::LayoutOf;

constexpr int kNodes = 1250;  // x 8 GPUs = 10,000 GPUs.
constexpr int kOperations = 100'000;

NodeSpec MakeNode(int i) {
  std::string name = fmt::format("node-{}", i);
  switch (i % 8) {
    case 0:
      return NodeFromInstanceType(name, "ml.p4d.24xlarge", GpuMode::kMig,
                                  fixtures::SeedA100Layout())
          .value();
    case 1:
      return NodeFromInstanceType(name, "ml.p4d.24xlarge", GpuMode::kMig,
                                  LayoutOf("a100-40gb", {{"3g.20gb", 0}, {"3g.20gb", 4}}))
          .value();
    case 2:
      return NodeFromInstanceType(name, "ml.p4d.24xlarge", GpuMode::kMig,
                                  LayoutOf("a100-40gb", {{"1g.5gb", 0},
                                                         {"1g.5gb", 1},
                                                         {"1g.5gb", 2},
                                                         {"1g.5gb", 3},
                                                         {"1g.5gb", 4},
                                                         {"1g.5gb", 5},
                                                         {"1g.5gb", 6}}))
          .value();
    case 3:
      return NodeFromInstanceType(
                 name, "ml.p5.48xlarge", GpuMode::kMig,
                 LayoutOf("h100-80gb",
                          {{"2g.20gb", 0}, {"1g.10gb", 2}, {"1g.10gb", 3}, {"3g.40gb", 4}}))
          .value();
    case 4:
    case 5:
      return NodeFromInstanceType(name, "ml.g5.48xlarge", GpuMode::kMgpu).value();
    case 6:
      return NodeFromInstanceType(name, "ml.g6.48xlarge", GpuMode::kMgpu).value();
    default:
      return NodeFromInstanceType(name, "ml.p5.48xlarge", GpuMode::kWhole).value();
  }
}

PlacementEngine MakeFleet() {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < kNodes; ++i) nodes.push_back(MakeNode(i));
  return PlacementEngine::Create(std::move(nodes), FleetOptions{.mgpu_reserved_memory_mib = 512})
      .value();
}

// The request shapes the workload draws from, resolved once.
std::vector<ResolvedRequest> Shapes(const PlacementEngine& e) {
  std::vector<Request> rs;
  for (const char* p :
       {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "1g.10gb", "2g.20gb", "3g.40gb"}) {
    rs.push_back(Request::Partition(p, 2000, 16384));
  }
  for (int k : {1, 2, 4}) rs.push_back(Request::WholeGpus(k, 8000 * k, 65536LL * k));
  for (int core : {5, 10, 20, 25, 30, 50}) {
    for (int64_t mem : {256, 1000, 4096}) {
      rs.push_back(Request::Share(ValidateShare(core, mem).value(), 1, 4096));
    }
  }
  rs.push_back(Request::Share(ValidateShare(40, std::nullopt).value(), 2, 8192));
  rs.push_back(Request::Share(ValidateShare(100, std::nullopt).value(), 4, 16384));
  std::vector<ResolvedRequest> out;
  for (const Request& r : rs) out.push_back(e.Resolve(r).value());
  return out;
}

struct Op {
  bool place;
  uint16_t shape;
  Strategy strategy;
  uint32_t victim;  // Release: index into the live list, modulo its size.
};

void BM_PlaceRelease(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    PlacementEngine e = MakeFleet();
    e.ReserveAllocations(1 << 20);
    std::vector<ResolvedRequest> shapes = Shapes(e);
    std::mt19937_64 rng(42);
    std::vector<AllocationId> live;
    live.reserve(1 << 20);
    // Warm-up fill to about half of the fleet.
    for (int i = 0; i < 40'000; ++i) {
      Placement p = e.Place(shapes[rng() % shapes.size()], 1, Strategy::kBinpack);
      if (p.placed()) live.push_back(p.allocations[0]);
    }
    std::vector<Op> ops(kOperations);
    for (Op& op : ops) {
      op =
          Op{rng() % 2 == 0, static_cast<uint16_t>(rng() % shapes.size()),
             rng() % 2 == 0 ? Strategy::kBinpack : Strategy::kSpread, static_cast<uint32_t>(rng())};
    }
    std::vector<int64_t> ns(kOperations);
    int64_t placed = 0;
    int64_t no_capacity = 0;
    state.ResumeTiming();

    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kOperations; ++i) {
      const Op& op = ops[i];
      auto t0 = std::chrono::steady_clock::now();
      if (op.place || live.empty()) {
        Placement p = e.Place(shapes[op.shape], 1, op.strategy);
        if (p.placed()) {
          live.push_back(p.allocations[0]);
          ++placed;
        } else {
          ++no_capacity;
        }
      } else {
        size_t v = op.victim % live.size();
        Status s = e.Release(live[v]);
        benchmark::DoNotOptimize(s);
        live[v] = live.back();
        live.pop_back();
      }
      auto t1 = std::chrono::steady_clock::now();
      ns[i] = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    state.PauseTiming();
    std::sort(ns.begin(), ns.end());
    auto pct = [&](double q) {
      return static_cast<double>(ns[static_cast<size_t>(q * (kOperations - 1))]) / 1000.0;
    };
    state.counters["decisions_per_s"] = kOperations / seconds;
    state.counters["p50_us"] = pct(0.50);
    state.counters["p99_us"] = pct(0.99);
    state.counters["p999_us"] = pct(0.999);
    state.counters["max_us"] = static_cast<double>(ns.back()) / 1000.0;
    state.counters["placed"] = static_cast<double>(placed);
    state.counters["no_capacity"] = static_cast<double>(no_capacity);
    state.counters["live_end"] = static_cast<double>(e.live_allocations());
    state.ResumeTiming();
  }
}
BENCHMARK(BM_PlaceRelease)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Steady state: one place and one release per iteration on the half-full fleet.
void BM_PlaceThenRelease(benchmark::State& state) {
  PlacementEngine e = MakeFleet();
  std::vector<ResolvedRequest> shapes = Shapes(e);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40'000; ++i) {
    (void)e.Place(shapes[rng() % shapes.size()], 1, Strategy::kBinpack);
  }
  size_t i = 0;
  for (auto _ : state) {
    ++i;
    Placement p =
        e.Place(shapes[i % shapes.size()], 1, (i & 1) ? Strategy::kSpread : Strategy::kBinpack);
    if (p.placed()) benchmark::DoNotOptimize(e.Release(p.allocations[0]));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 2);
}
BENCHMARK(BM_PlaceThenRelease);

// mGPU packing: `arg` random shares (core 5..99, memory 256..12288 MiB) placed online on an
// empty fleet of A10G cards. Lower bound: max(ceil(sum core / 100), ceil(sum memory / card
// memory), ceil(shares / 16)).
void BM_PackingMgpu(benchmark::State& state, Strategy strategy) {
  const int shares = static_cast<int>(state.range(0));
  double ratio = 0;
  int64_t used = 0;
  int64_t bound = 0;
  for (auto _ : state) {
    std::vector<NodeSpec> nodes;
    for (int i = 0; i < shares / 8 + 1; ++i) {
      nodes.push_back(
          NodeFromInstanceType(fmt::format("n{}", i), "ml.g5.48xlarge", GpuMode::kMgpu).value());
    }
    PlacementEngine e = PlacementEngine::Create(std::move(nodes)).value();
    const int64_t card = e.Gpus()[0].memory_capacity_mib;
    std::mt19937_64 rng(1234);
    int64_t core_sum = 0;
    int64_t mem_sum = 0;
    for (int i = 0; i < shares; ++i) {
      int core = 5 + static_cast<int>(rng() % 95);  // 5..99: a fraction with memory.
      int64_t mem = 256 + static_cast<int64_t>(rng() % (12288 - 256 + 1));
      core_sum += core;
      mem_sum += mem;
      Placement p = e.Place(Request::Share(MgpuShare{core, mem}), 1, strategy).value();
      if (!p.placed()) state.SkipWithError("fleet too small for the workload");
    }
    used = 0;
    for (const GpuUsage& g : e.Gpus()) used += g.workers > 0 ? 1 : 0;
    bound = std::max({(core_sum + 99) / 100, (mem_sum + card - 1) / card,
                      (static_cast<int64_t>(shares) + 15) / 16});
    ratio = static_cast<double>(used) / static_cast<double>(bound);
  }
  state.counters["gpus_used"] = static_cast<double>(used);
  state.counters["lower_bound"] = static_cast<double>(bound);
  state.counters["ratio"] = ratio;
}
BENCHMARK_CAPTURE(BM_PackingMgpu, binpack, Strategy::kBinpack)
    ->Arg(1000)
    ->Arg(10000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PackingMgpu, spread, Strategy::kSpread)
    ->Arg(1000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Whole-GPU packing: `arg` random requests of 1, 2 or 4 GPUs on one node, on 8-GPU nodes.
// Lower bound: ceil(sum GPUs / 8) nodes.
void BM_PackingWholeGpus(benchmark::State& state) {
  const int requests = static_cast<int>(state.range(0));
  int64_t used = 0;
  int64_t bound = 0;
  for (auto _ : state) {
    std::vector<NodeSpec> nodes;
    for (int i = 0; i < requests / 2 + 1; ++i) {
      nodes.push_back(
          NodeFromInstanceType(fmt::format("n{}", i), "ml.p5.48xlarge", GpuMode::kWhole).value());
    }
    PlacementEngine e = PlacementEngine::Create(std::move(nodes)).value();
    std::mt19937_64 rng(99);
    int64_t gpus = 0;
    for (int i = 0; i < requests; ++i) {
      int k = 1 << (rng() % 3);
      gpus += k;
      if (!e.Place(Request::WholeGpus(k), 1, Strategy::kBinpack)->placed()) {
        state.SkipWithError("fleet too small for the workload");
      }
    }
    std::vector<std::string_view> busy_nodes;
    for (const GpuUsage& g : e.Gpus()) {
      if (g.busy && (busy_nodes.empty() || busy_nodes.back() != g.node))
        busy_nodes.push_back(g.node);
    }
    used = static_cast<int64_t>(busy_nodes.size());
    bound = (gpus + 7) / 8;
  }
  state.counters["nodes_used"] = static_cast<double>(used);
  state.counters["lower_bound"] = static_cast<double>(bound);
  state.counters["ratio"] = static_cast<double>(used) / static_cast<double>(bound);
}
BENCHMARK(BM_PackingWholeGpus)->Arg(1000)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace carve::core
