// The fragmentation metric: free capacity that no copy of a given request shape can use.
//
// Worked example (one node, two A10G mGPU cards of 24,576 MiB, 8 vCPUs free, shape core=30%
// memory=1000 MiB + 2 vCPUs): card 0 has 50% core free, card 1 100%. Card 0 holds 1 copy and
// card 1 holds 3, but the host allows only 4 copies in all (8/2), so 4 copies use 120% core and
// the other 30% (20 on card 0, 10 on card 1) is stranded: free=150, usable=120, stranded=30.
#include <algorithm>

#include "core/placement.h"

namespace carve::core {

FragmentationReport PlacementEngine::Fragmentation(const ResolvedRequest& r) const {
  FragmentationReport out;
  const bool mgpu = r.kind == RequestKind::kShare;
  out.unit = r.kind == RequestKind::kPartition   ? "compute slices"
             : r.kind == RequestKind::kWholeGpus ? "GPUs"
                                                 : "core percent";
  for (uint32_t n = 0; n < nodes_.size(); ++n) {
    const NodeState& ns = nodes_[n];
    // Copies the node's host can still take; each GPU's copies are used up in index order.
    int64_t host_left = CopiesOnHost(r, n);
    int64_t node_copies = std::min(host_left, CopiesOnGpus(r, n));
    out.copies += node_copies;
    int64_t copies_left = node_copies;
    for (uint32_t g = ns.first_gpu; g < ns.first_gpu + ns.gpu_count; ++g) {
      const GpuState& gs = gpus_[g];
      switch (r.kind) {
        case RequestKind::kPartition:
          for (int p = 0; p < gs.partition_count; ++p) {
            const PartitionState& ps = partitions_[gs.first_partition + p];
            if (ps.busy) {
              continue;
            }
            out.free += ps.instance.profile->compute_slices;
            if (ps.shape == r.shape && copies_left > 0) {
              out.usable += ps.instance.profile->compute_slices;
              --copies_left;
            }
          }
          break;
        case RequestKind::kWholeGpus:
          if (gs.mode == GpuMode::kWhole && !gs.busy) {
            ++out.free;
          }
          break;
        case RequestKind::kShare: {
          if (gs.mode != GpuMode::kMgpu || gs.busy) {
            break;
          }
          out.free += gs.free_core;
          out.free_memory_mib += gs.free_memory_mib;
          if (r.core_percent >= kFullCardCorePercent) {
            break;  // Counted per node below.
          }
          int64_t mem = CardShareMemory(gs, r.core_percent, r.memory_mib);
          int64_t k = std::min<int64_t>({gs.free_core / r.core_percent, gs.free_memory_mib / mem,
                                         kMaxWorkersPerCard - gs.workers, copies_left});
          out.usable += k * r.core_percent;
          out.stranded_memory_mib -= k * mem;  // Turned into "free - usable" below.
          copies_left -= k;
          break;
        }
      }
    }
    if (r.kind == RequestKind::kWholeGpus) {
      out.usable += node_copies * r.units;
    }
    if (mgpu && r.core_percent >= kFullCardCorePercent) {
      // Whole-card copies take idle cards in index order, all their core and memory.
      int64_t cards_left = node_copies * r.units;
      for (uint32_t g = ns.first_gpu; g < ns.first_gpu + ns.gpu_count && cards_left > 0; ++g) {
        const GpuState& gs = gpus_[g];
        if (gs.mode != GpuMode::kMgpu || gs.busy || gs.workers != 0) {
          continue;
        }
        out.usable += kFullCardCorePercent;
        out.stranded_memory_mib -= gs.free_memory_mib;
        --cards_left;
      }
    }
  }
  out.stranded = out.free - out.usable;
  out.stranded_memory_mib += mgpu ? out.free_memory_mib : 0;
  out.stranded_permille = out.free > 0 ? out.stranded * 1000 / out.free : 0;
  return out;
}

}  // namespace carve::core
