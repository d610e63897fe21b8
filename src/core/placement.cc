// PlacementEngine decisions: choosing a node through the shape's score buckets, choosing GPUs on
// it, all-or-nothing placement of N copies, and the "does not fit" reason.
#include "core/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace carve::core {

std::string_view StrategyName(Strategy s) { return s == Strategy::kSpread ? "SPREAD" : "BINPACK"; }

Result<Strategy> ParseStrategy(std::string_view text) {
  std::string upper(text);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (upper == "SPREAD") {
    return Strategy::kSpread;
  }
  if (upper == "BINPACK") {
    return Strategy::kBinpack;
  }
  return InvalidArgument(
      fmt::format("placement strategy '{}': must be SPREAD or BINPACK", std::string(text)));
}

// BINPACK takes the node with the lowest score that still fits (best fit), SPREAD the highest
// (worst fit). Nodes in a bucket that fail the host or exact GPU check are skipped.
uint32_t PlacementEngine::FindNode(const ResolvedRequest& r, Strategy s, Choice& choice) const {
  return buckets_[r.shape].Find(r.units, s == Strategy::kBinpack, [&](uint32_t node) {
    const NodeState& ns = nodes_[node];
    if (!ns.schedulable || ns.free_cpu_milli < r.cpu_milli ||
        ns.free_host_mib < r.host_memory_mib) {
      return false;
    }
    return ChooseOnNode(r, s, node, choice);
  });
}

Status PlacementEngine::SetSchedulable(const std::string& node, bool schedulable) {
  auto it = node_by_name_.find(node);
  if (it == node_by_name_.end()) return NotFound(fmt::format("no node named '{}'", node));
  nodes_[it->second].schedulable = schedulable;
  return OkStatus();
}

bool PlacementEngine::schedulable(const std::string& node) const {
  auto it = node_by_name_.find(node);
  return it != node_by_name_.end() && nodes_[it->second].schedulable;
}

bool PlacementEngine::ChooseOnNode(const ResolvedRequest& r, Strategy s, uint32_t node,
                                   Choice& choice) const {
  const NodeState& ns = nodes_[node];
  const bool binpack = s == Strategy::kBinpack;
  choice.node = node;
  choice.count = 0;
  choice.memory_mib = 0;
  const uint32_t end = ns.first_gpu + ns.gpu_count;
  switch (r.kind) {
    case RequestKind::kPartition: {
      // Among GPUs with a free partition of this profile, BINPACK prefers the GPU with the
      // fewest free partitions (keeping others empty), SPREAD the one with the most.
      uint32_t best = UINT32_MAX;
      int best_free = 0;
      for (uint32_t g = ns.first_gpu; g < end; ++g) {
        const GpuState& gs = gpus_[g];
        if (gs.free_partitions == 0) {
          continue;
        }
        if (best != UINT32_MAX &&
            (binpack ? gs.free_partitions >= best_free : gs.free_partitions <= best_free)) {
          continue;
        }
        for (int p = 0; p < gs.partition_count; ++p) {
          const PartitionState& ps = partitions_[gs.first_partition + p];
          if (!ps.busy && ps.shape == r.shape) {
            best = gs.first_partition + p;
            best_free = gs.free_partitions;
            break;
          }
        }
      }
      if (best == UINT32_MAX) {
        return false;
      }
      choice.items[0] = best;
      choice.count = 1;
      return true;
    }
    case RequestKind::kWholeGpus:
      for (uint32_t g = ns.first_gpu; g < end && choice.count < r.units; ++g) {
        if (gpus_[g].mode == GpuMode::kWhole && !gpus_[g].busy) {
          choice.items[choice.count++] = g;
        }
      }
      return choice.count == r.units;
    case RequestKind::kShare:
      break;
  }
  if (r.core_percent >= kFullCardCorePercent) {
    for (uint32_t g = ns.first_gpu; g < end && choice.count < r.units; ++g) {
      const GpuState& gs = gpus_[g];
      if (gs.mode == GpuMode::kMgpu && !gs.busy && gs.workers == 0) {
        choice.items[choice.count++] = g;
      }
    }
    return choice.count == r.units;
  }
  // A fractional share: one card with room for core, memory and one more worker. BINPACK takes
  // the card with the least free core (then memory), SPREAD the most.
  uint32_t best = UINT32_MAX;
  for (uint32_t g = ns.first_gpu; g < end; ++g) {
    const GpuState& gs = gpus_[g];
    if (gs.mode != GpuMode::kMgpu || gs.busy || gs.workers >= kMaxWorkersPerCard ||
        gs.free_core < r.core_percent) {
      continue;
    }
    int64_t mem = CardShareMemory(gs, r.core_percent, r.memory_mib);
    if (gs.free_memory_mib < mem) {
      continue;
    }
    if (best != UINT32_MAX) {
      const GpuState& b = gpus_[best];
      bool better = binpack ? std::pair(gs.free_core, gs.free_memory_mib) <
                                  std::pair(b.free_core, b.free_memory_mib)
                            : std::pair(gs.free_core, gs.free_memory_mib) >
                                  std::pair(b.free_core, b.free_memory_mib);
      if (!better) {
        continue;
      }
    }
    best = g;
    choice.memory_mib = mem;
  }
  if (best == UINT32_MAX) {
    return false;
  }
  choice.items[0] = best;
  choice.count = 1;
  return true;
}

Placement PlacementEngine::Place(const ResolvedRequest& r, int copies, Strategy s) {
  Placement out;
  if (copies < 1) {
    return out;
  }
  out.allocations.reserve(static_cast<size_t>(copies));
  Choice choice;
  for (int i = 0; i < copies; ++i) {
    if (FindNode(r, s, choice) == ScoreBuckets::kNone) {
      // All or nothing: give back the copies placed so far, newest first.
      for (auto it = out.allocations.rbegin(); it != out.allocations.rend(); ++it) {
        Status released = Release(*it);
        (void)released;  // Ids issued by this call are live by construction.
      }
      out.allocations.clear();
      out.outcome = Placement::Outcome::kNoCapacity;
      out.reason = NoCapacityReason(r, copies, s);
      return out;
    }
    out.allocations.push_back(Apply(r, choice, 0));
  }
  return out;
}

Result<Placement> PlacementEngine::Place(const Request& request, int copies, Strategy s) {
  if (copies < 1) {
    return InvalidArgument(fmt::format("copies={}: must be at least 1", copies));
  }
  CARVE_ASSIGN_OR_RETURN(ResolvedRequest r, Resolve(request));
  return Place(r, copies, s);
}

int64_t PlacementEngine::CopiesOnHost(const ResolvedRequest& r, uint32_t node) const {
  const NodeState& ns = nodes_[node];
  int64_t n = std::numeric_limits<int64_t>::max();
  if (r.cpu_milli > 0) {
    n = std::min<int64_t>(n, ns.free_cpu_milli / r.cpu_milli);
  }
  if (r.host_memory_mib > 0) {
    n = std::min(n, ns.free_host_mib / r.host_memory_mib);
  }
  return n;
}

int64_t PlacementEngine::CopiesOnGpus(const ResolvedRequest& r, uint32_t node) const {
  const NodeState& ns = nodes_[node];
  int64_t units = 0;
  for (uint32_t g = ns.first_gpu; g < ns.first_gpu + ns.gpu_count; ++g) {
    const GpuState& gs = gpus_[g];
    switch (r.kind) {
      case RequestKind::kPartition:
        for (int p = 0; p < gs.partition_count; ++p) {
          const PartitionState& ps = partitions_[gs.first_partition + p];
          units += (!ps.busy && ps.shape == r.shape) ? 1 : 0;
        }
        break;
      case RequestKind::kWholeGpus:
        units += (gs.mode == GpuMode::kWhole && !gs.busy) ? 1 : 0;
        break;
      case RequestKind::kShare:
        if (gs.mode != GpuMode::kMgpu || gs.busy) {
          break;
        }
        if (r.core_percent >= kFullCardCorePercent) {
          units += gs.workers == 0 ? 1 : 0;
        } else {
          int64_t mem = CardShareMemory(gs, r.core_percent, r.memory_mib);
          units += std::min<int64_t>({gs.free_core / r.core_percent, gs.free_memory_mib / mem,
                                      kMaxWorkersPerCard - gs.workers});
        }
        break;
    }
  }
  bool per_card = r.kind == RequestKind::kShare && r.core_percent < kFullCardCorePercent;
  return (r.kind == RequestKind::kPartition || per_card) ? units : units / r.units;
}

std::string PlacementEngine::NoCapacityReason(const ResolvedRequest& r, int copies,
                                              Strategy s) const {
  int64_t gpu_copies = 0;
  int64_t fitting = 0;
  int gpu_nodes = 0;
  int64_t best_cpu_milli = 0;
  int64_t best_host_mib = 0;
  // Only nodes listed in the shape's buckets (score >= 1) can have room; an exhausted shape
  // costs nothing to report.
  int unschedulable = 0;
  buckets_[r.shape].Find(1, true, [&](uint32_t n) {
    if (!nodes_[n].schedulable) {
      ++unschedulable;
      return false;
    }
    int64_t g = CopiesOnGpus(r, n);
    if (g == 0) {
      return false;
    }
    gpu_copies += g;
    ++gpu_nodes;
    fitting += std::min(g, CopiesOnHost(r, n));
    best_cpu_milli = std::max(best_cpu_milli, nodes_[n].free_cpu_milli);
    best_host_mib = std::max(best_host_mib, nodes_[n].free_host_mib);
    return false;
  });
  std::string free_text;
  if (gpu_copies == 0) {
    free_text = "no GPU capacity for even one copy";
  } else {
    free_text = fmt::format(
        "GPU room for {} cop{} on {} node{}, of which the nodes' free host CPU and memory allow "
        "{} (most free on those nodes: {} vCPUs, {} MiB)",
        gpu_copies, gpu_copies == 1 ? "y" : "ies", gpu_nodes, gpu_nodes == 1 ? "" : "s", fitting,
        VcpuText(best_cpu_milli), best_host_mib);
  }
  if (unschedulable > 0) {
    free_text += fmt::format("; {} node{} with room {} not schedulable (not ready)", unschedulable,
                             unschedulable == 1 ? "" : "s", unschedulable == 1 ? "is" : "are");
  }
  return fmt::format("asked for {} cop{} of {} with {}; free: {}", copies,
                     copies == 1 ? "y" : "ies", r.description, StrategyName(s), free_text);
}

}  // namespace carve::core
