// PlacementEngine allocation records: release, describe, and restore from persisted form.
#include <fmt/format.h>

#include <algorithm>

#include "core/placement.h"

namespace carve::core {
namespace {

constexpr int kSlotBits = 24;
constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;

}  // namespace

const PlacementEngine::Slot* PlacementEngine::LiveSlot(AllocationId id) const {
  uint64_t slot = id.value() & kSlotMask;
  if (id.value() == 0 || slot >= slots_.size() || slots_[slot].id != id.value()) {
    return nullptr;
  }
  return &slots_[slot];
}

Status PlacementEngine::Release(AllocationId id) {
  const Slot* slot = LiveSlot(id);
  if (slot == nullptr) {
    return NotFound(
        fmt::format("allocation {} is not live (never issued or released already)", id.value()));
  }
  Undo(slots_[id.value() & kSlotMask]);
  return OkStatus();
}

void PlacementEngine::ReserveAllocations(uint32_t count) {
  slots_.reserve(count);
  free_slots_.reserve(count);
}

Result<AllocationRecord> PlacementEngine::Describe(AllocationId id) const {
  const Slot* slot = LiveSlot(id);
  if (slot == nullptr) {
    return NotFound(fmt::format("allocation {} is not live", id.value()));
  }
  const Choice& c = slot->choice;
  AllocationRecord rec;
  rec.id = id;
  rec.node = specs_[c.node].name;
  rec.kind = slot->kind;
  rec.cpu_milli = slot->cpu_milli;
  rec.host_memory_mib = slot->host_memory_mib;
  if (slot->kind == RequestKind::kPartition) {
    const PartitionState& p = partitions_[c.items[0]];
    rec.gpu_indexes.push_back(gpus_[p.gpu].index);
    rec.profile = std::string(p.instance.profile->name);
    rec.partition_start = p.instance.start;
  } else {
    for (int i = 0; i < c.count; ++i) {
      rec.gpu_indexes.push_back(gpus_[c.items[i]].index);
    }
  }
  if (slot->kind == RequestKind::kShare) {
    rec.core_percent = slot->core_percent;
    rec.memory_mib = c.memory_mib;
  }
  return rec;
}

std::vector<AllocationRecord> PlacementEngine::Allocations() const {
  std::vector<AllocationRecord> out;
  for (const Slot& s : slots_) {
    if (s.id != 0) {
      out.push_back(Describe(AllocationId(s.id)).value());
    }
  }
  std::sort(out.begin(), out.end(),
            [](const AllocationRecord& a, const AllocationRecord& b) { return a.id < b.id; });
  return out;
}

Status PlacementEngine::Restore(const AllocationRecord& rec) {
  const uint64_t id = rec.id.value();
  if ((id >> kSlotBits) == 0) {
    return InvalidArgument(
        fmt::format("allocation id {} was not issued by a placement engine", id));
  }
  const uint64_t slot = id & kSlotMask;
  if (slot < slots_.size() && slots_[slot].id != 0) {
    return AlreadyExists(
        fmt::format("allocation {} (slot {}) is live already as {}", id, slot, slots_[slot].id));
  }
  CARVE_ASSIGN_OR_RETURN(AllocationId restored, Reapply(rec, id));
  (void)restored;
  return OkStatus();
}

Result<AllocationId> PlacementEngine::Adopt(const AllocationRecord& rec) { return Reapply(rec, 0); }

Result<AllocationId> PlacementEngine::Reapply(const AllocationRecord& rec, uint64_t id) {
  const std::string what = id != 0 ? fmt::format("allocation {}", id) : "the allocation";
  auto node_it = node_by_name_.find(rec.node);
  if (node_it == node_by_name_.end()) {
    return NotFound(fmt::format("{}: node '{}' is not in the fleet", what, rec.node));
  }
  const uint32_t node = node_it->second;
  const NodeState& ns = nodes_[node];
  if (ns.free_cpu_milli < rec.cpu_milli || ns.free_host_mib < rec.host_memory_mib) {
    return FailedPrecondition(
        fmt::format("{}: node '{}' has {} vCPUs and {} MiB host memory free; the allocation holds "
                    "{} vCPUs and {} MiB",
                    what, rec.node, VcpuText(ns.free_cpu_milli), ns.free_host_mib,
                    VcpuText(rec.cpu_milli), rec.host_memory_mib));
  }
  ResolvedRequest r;
  r.kind = rec.kind;
  r.cpu_milli = rec.cpu_milli;
  r.host_memory_mib = rec.host_memory_mib;
  r.core_percent = rec.core_percent;
  Choice c;
  c.node = node;
  if (rec.gpu_indexes.empty() || rec.gpu_indexes.size() > kMaxGpusPerNode) {
    return InvalidArgument(fmt::format("{}: {} GPU indexes; must be 1..{}", what,
                                       rec.gpu_indexes.size(), kMaxGpusPerNode));
  }
  for (int index : rec.gpu_indexes) {
    if (index < 0 || static_cast<uint32_t>(index) >= ns.gpu_count) {
      return NotFound(fmt::format("{}: node '{}' has no GPU {}", what, rec.node, index));
    }
    uint32_t g = ns.first_gpu + static_cast<uint32_t>(index);
    if (std::find(c.items.begin(), c.items.begin() + c.count, g) != c.items.begin() + c.count) {
      return InvalidArgument(fmt::format("{}: GPU {} listed twice", what, index));
    }
    c.items[c.count++] = g;
  }
  const GpuState& first = gpus_[c.items[0]];
  auto wrong_mode = [&](const GpuState& g, GpuMode want) {
    return FailedPrecondition(fmt::format("{}: node '{}' GPU {} is {}, not {}", what, rec.node,
                                          g.index, GpuModeName(g.mode), GpuModeName(want)));
  };
  auto taken = [&](const GpuState& g, std::string_view why) {
    return FailedPrecondition(
        fmt::format("{}: node '{}' GPU {}: {}", what, rec.node, g.index, why));
  };
  switch (rec.kind) {
    case RequestKind::kPartition: {
      if (first.mode != GpuMode::kMig) {
        return wrong_mode(first, GpuMode::kMig);
      }
      uint32_t found = UINT32_MAX;
      for (int p = 0; p < first.partition_count; ++p) {
        const PartitionState& ps = partitions_[first.first_partition + p];
        if (ps.instance.profile->name == rec.profile && ps.instance.start == rec.partition_start) {
          found = first.first_partition + p;
        }
      }
      if (found == UINT32_MAX) {
        return NotFound(
            fmt::format("{}: node '{}' GPU {} has no {} partition at start "
                        "{}",
                        what, rec.node, first.index, rec.profile, rec.partition_start));
      }
      if (partitions_[found].busy) {
        return taken(first, "the partition is allocated already");
      }
      c.items[0] = found;
      c.count = 1;
      break;
    }
    case RequestKind::kWholeGpus:
      for (int i = 0; i < c.count; ++i) {
        const GpuState& g = gpus_[c.items[i]];
        if (g.mode != GpuMode::kWhole) {
          return wrong_mode(g, GpuMode::kWhole);
        }
        if (g.busy) {
          return taken(g, "the GPU is allocated already");
        }
      }
      break;
    case RequestKind::kShare: {
      CARVE_ASSIGN_OR_RETURN(MgpuShare share, ValidateShare(rec.core_percent, {}));
      if (c.count != share.card_count()) {
        return InvalidArgument(
            fmt::format("{}: core={} needs {} card(s), record lists "
                        "{}",
                        what, rec.core_percent, share.card_count(), c.count));
      }
      for (int i = 0; i < c.count; ++i) {
        const GpuState& g = gpus_[c.items[i]];
        if (g.mode != GpuMode::kMgpu) {
          return wrong_mode(g, GpuMode::kMgpu);
        }
        if (g.busy) {
          return taken(g, "the card is allocated whole already");
        }
        if (share.whole_cards() && g.workers != 0) {
          return taken(g, fmt::format("the card has {} workers; a whole-card share needs it idle",
                                      g.workers));
        }
        if (!share.whole_cards() &&
            (g.workers >= kMaxWorkersPerCard || g.free_core < rec.core_percent ||
             g.free_memory_mib < rec.memory_mib || rec.memory_mib < 1)) {
          return taken(g, fmt::format("{} workers, {}% core and {} MiB free; the allocation holds "
                                      "1 worker, {}% and {} MiB",
                                      g.workers, g.free_core, g.free_memory_mib, rec.core_percent,
                                      rec.memory_mib));
        }
      }
      c.memory_mib = share.whole_cards() ? 0 : rec.memory_mib;
      break;
    }
  }
  return Apply(r, c, id);
}

}  // namespace carve::core
