// PlacementEngine: building the indexed fleet state, resolving requests, and the two primitives
// every decision goes through (Apply, Undo) which keep the per-shape node scores current.
#include <fmt/format.h>

#include <algorithm>

#include "catalog/catalog.h"
#include "core/placement.h"

namespace carve::core {
namespace {

constexpr int kSlotBits = 24;
constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;

// "mig-1g.10gb" and "1g.10gb" name the same profile.
std::string NvmlSpelling(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::string(catalog::NvmlProfileName(s));
}

std::string HostText(int64_t cpu_milli, int64_t host_memory_mib) {
  if (cpu_milli == 0 && host_memory_mib == 0) {
    return "";
  }
  return fmt::format(" + {} vCPUs + {} MiB host memory", VcpuText(cpu_milli), host_memory_mib);
}

}  // namespace

std::string VcpuText(int64_t cpu_milli) {
  return fmt::format("{:g}", static_cast<double>(cpu_milli) / 1000.0);
}

std::string_view GpuModeName(GpuMode mode) {
  switch (mode) {
    case GpuMode::kWhole:
      return "whole";
    case GpuMode::kMig:
      return "mig";
    case GpuMode::kMgpu:
      return "mgpu";
  }
  return "unknown";
}

Request Request::Partition(std::string profile, int64_t cpu_milli, int64_t host_memory_mib) {
  Request r;
  r.kind = RequestKind::kPartition;
  r.profile = std::move(profile);
  r.cpu_milli = cpu_milli;
  r.host_memory_mib = host_memory_mib;
  return r;
}

Request Request::WholeGpus(int gpus, int64_t cpu_milli, int64_t host_memory_mib) {
  Request r;
  r.kind = RequestKind::kWholeGpus;
  r.gpus = gpus;
  r.cpu_milli = cpu_milli;
  r.host_memory_mib = host_memory_mib;
  return r;
}

Request Request::Share(MgpuShare share, int64_t cpu_milli, int64_t host_memory_mib) {
  Request r;
  r.kind = RequestKind::kShare;
  r.share = share;
  r.cpu_milli = cpu_milli;
  r.host_memory_mib = host_memory_mib;
  return r;
}

Result<PlacementEngine> PlacementEngine::Create(std::vector<NodeSpec> nodes, FleetOptions options) {
  if (options.mgpu_reserved_memory_mib < 0) {
    return InvalidArgument(fmt::format("mgpu_reserved_memory_mib={}: must not be negative",
                                       options.mgpu_reserved_memory_mib));
  }
  PlacementEngine e;
  e.options_ = options;
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    const NodeSpec& spec = nodes[n];
    if (spec.name.empty()) {
      return InvalidArgument(fmt::format("node #{} has no name", n));
    }
    if (!e.node_by_name_.emplace(spec.name, n).second) {
      return InvalidArgument(fmt::format("node name '{}' appears twice", spec.name));
    }
    if (spec.cpu_milli < 0 || spec.host_memory_mib < 0) {
      return InvalidArgument(
          fmt::format("node '{}': cpu_milli={} host_memory_mib={} must not be negative", spec.name,
                      spec.cpu_milli, spec.host_memory_mib));
    }
    if (spec.gpus.size() > kMaxGpusPerNode) {
      return InvalidArgument(fmt::format("node '{}' has {} GPUs; at most {} per node", spec.name,
                                         spec.gpus.size(), kMaxGpusPerNode));
    }
    NodeState ns;
    ns.free_cpu_milli = spec.cpu_milli;
    ns.free_host_mib = spec.host_memory_mib;
    ns.first_gpu = static_cast<uint32_t>(e.gpus_.size());
    ns.gpu_count = static_cast<uint32_t>(spec.gpus.size());
    e.nodes_.push_back(ns);
    for (size_t i = 0; i < spec.gpus.size(); ++i) {
      const GpuSpec& g = spec.gpus[i];
      if (g.model == nullptr) {
        return InvalidArgument(fmt::format("node '{}' GPU {} has no model", spec.name, i));
      }
      GpuState gs;
      gs.node = n;
      gs.index = static_cast<int>(i);
      gs.mode = g.mode;
      gs.model = g.model;
      if (g.mode == GpuMode::kMgpu) {
        gs.memory_capacity_mib = g.model->memory_mib - options.mgpu_reserved_memory_mib;
        if (gs.memory_capacity_mib < kMinShareMemoryMib) {
          return InvalidArgument(fmt::format(
              "node '{}' GPU {}: {} has {} MiB, which leaves less than {} MiB for mGPU workers "
              "after the {} MiB reserve",
              spec.name, i, g.model->id, g.model->memory_mib, kMinShareMemoryMib,
              options.mgpu_reserved_memory_mib));
        }
        gs.free_core = kFullCardCorePercent;
        gs.free_memory_mib = gs.memory_capacity_mib;
      }
      if (g.mode == GpuMode::kMig) {
        if (g.layout.gpu != nullptr && g.layout.gpu != g.model) {
          return InvalidArgument(fmt::format("node '{}' GPU {} is a {} but its layout is for {}",
                                             spec.name, i, g.model->id, g.layout.gpu->id));
        }
        gs.first_partition = static_cast<uint32_t>(e.partitions_.size());
        gs.partition_count = static_cast<int>(g.layout.instances.size());
        gs.free_partitions = gs.partition_count;
        for (const PlacedInstance& inst : g.layout.instances) {
          if (inst.profile == nullptr) {
            return InvalidArgument(
                fmt::format("node '{}' GPU {}: a layout instance has no profile", spec.name, i));
          }
          std::string name(inst.profile->name);
          auto [it, added] = e.shape_by_name_.emplace(
              name, static_cast<uint16_t>(kFirstPartitionShape + e.shape_names_.size()));
          if (added) {
            e.shape_names_.push_back(name);
          }
          e.partitions_.push_back(
              PartitionState{static_cast<uint32_t>(e.gpus_.size()), it->second, false, inst});
        }
      }
      e.gpus_.push_back(gs);
    }
  }
  e.specs_ = std::move(nodes);
  size_t shapes = kFirstPartitionShape + e.shape_names_.size();
  e.buckets_.assign(shapes, ScoreBuckets(static_cast<uint32_t>(e.nodes_.size())));
  for (uint32_t n = 0; n < e.nodes_.size(); ++n) {
    const NodeState& ns = e.nodes_[n];
    std::vector<int> counts(shapes, 0);
    for (uint32_t g = ns.first_gpu; g < ns.first_gpu + ns.gpu_count; ++g) {
      const GpuState& gs = e.gpus_[g];
      if (gs.mode == GpuMode::kWhole) {
        ++counts[kShapeWhole];
      }
      for (int p = 0; p < gs.partition_count; ++p) {
        ++counts[e.partitions_[gs.first_partition + p].shape];
      }
    }
    for (size_t s = 0; s < shapes; ++s) {
      if (s != kShapeMgpuIdle && s != kShapeMgpuFraction) {
        e.buckets_[s].Set(n, counts[s]);
      }
    }
    e.RefreshMgpuScores(n);
  }
  return e;
}

Result<ResolvedRequest> PlacementEngine::Resolve(const Request& request) const {
  if (request.cpu_milli < 0 || request.host_memory_mib < 0) {
    return InvalidArgument(fmt::format("cpu_milli={} host_memory_mib={}: must not be negative",
                                       request.cpu_milli, request.host_memory_mib));
  }
  ResolvedRequest r;
  r.kind = request.kind;
  r.cpu_milli = request.cpu_milli;
  r.host_memory_mib = request.host_memory_mib;
  std::string host = HostText(request.cpu_milli, request.host_memory_mib);
  switch (request.kind) {
    case RequestKind::kPartition: {
      std::string name = NvmlSpelling(request.profile);
      auto it = shape_by_name_.find(name);
      if (it == shape_by_name_.end()) {
        return NotFound(fmt::format(
            "no GPU in the fleet is carved with partitions of profile '{}'; carved profiles: "
            "[{}]",
            request.profile, fmt::join(shape_names_, ", ")));
      }
      r.shape = it->second;
      r.units = 1;
      r.description = fmt::format("1 x mig-{}{}", name, host);
      return r;
    }
    case RequestKind::kWholeGpus:
      if (request.gpus < 1 || request.gpus > kMaxGpusPerNode) {
        return InvalidArgument(fmt::format("gpus={}: whole GPUs per copy must be 1..{}",
                                           request.gpus, kMaxGpusPerNode));
      }
      r.shape = kShapeWhole;
      r.units = request.gpus;
      r.description = fmt::format("{} whole GPU{} on one node{}", request.gpus,
                                  request.gpus == 1 ? "" : "s", host);
      return r;
    case RequestKind::kShare: {
      CARVE_ASSIGN_OR_RETURN(MgpuShare share,
                             ValidateShare(request.share.core_percent, request.share.memory_mib));
      r.core_percent = share.core_percent;
      r.memory_mib = share.memory_mib.value_or(0);
      if (share.whole_cards()) {
        if (share.card_count() > kMaxGpusPerNode) {
          return InvalidArgument(fmt::format("core={}: at most {} whole cards fit on one node",
                                             share.core_percent, kMaxGpusPerNode));
        }
        r.shape = kShapeMgpuIdle;
        r.units = share.card_count();
      } else {
        r.shape = kShapeMgpuFraction;
        r.units = share.core_percent;
      }
      r.description = fmt::format("mGPU share {}{}", share.ToString(), host);
      return r;
    }
  }
  return Internal("unknown request kind");
}

int64_t PlacementEngine::CardShareMemory(const GpuState& g, int core_percent, int64_t memory_mib) {
  // An unset quota is proportional to core: core% of the card's shareable memory, floored.
  return memory_mib != 0 ? memory_mib : g.memory_capacity_mib * core_percent / 100;
}

void PlacementEngine::RefreshMgpuScores(uint32_t node) {
  const NodeState& ns = nodes_[node];
  int idle = 0;
  int best_core = 0;
  for (uint32_t g = ns.first_gpu; g < ns.first_gpu + ns.gpu_count; ++g) {
    const GpuState& gs = gpus_[g];
    if (gs.mode != GpuMode::kMgpu || gs.busy) {
      continue;
    }
    if (gs.workers == 0) {
      ++idle;
    }
    if (gs.workers < kMaxWorkersPerCard) {
      best_core = std::max(best_core, gs.free_core);
    }
  }
  buckets_[kShapeMgpuIdle].Set(node, idle);
  buckets_[kShapeMgpuFraction].Set(node, best_core);
}

AllocationId PlacementEngine::Apply(const ResolvedRequest& r, const Choice& c, uint64_t forced_id) {
  uint32_t slot_index;
  if (forced_id != 0) {
    slot_index = static_cast<uint32_t>(forced_id & kSlotMask);
    if (slot_index >= slots_.size()) {
      for (uint32_t s = static_cast<uint32_t>(slots_.size()); s < slot_index; ++s) {
        free_slots_.push_back(s);
      }
      slots_.resize(slot_index + 1);
    } else {
      free_slots_.erase(std::find(free_slots_.begin(), free_slots_.end(), slot_index));
    }
    next_seq_ = std::max(next_seq_, (forced_id >> kSlotBits) + 1);
  } else if (!free_slots_.empty()) {
    slot_index = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot_index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& slot = slots_[slot_index];
  slot.id = forced_id != 0 ? forced_id : (next_seq_++ << kSlotBits) | slot_index;
  slot.kind = r.kind;
  slot.choice = c;
  slot.core_percent = r.core_percent;
  slot.cpu_milli = r.cpu_milli;
  slot.host_memory_mib = r.host_memory_mib;
  ++live_;

  NodeState& ns = nodes_[c.node];
  ns.free_cpu_milli -= r.cpu_milli;
  ns.free_host_mib -= r.host_memory_mib;
  if (r.kind == RequestKind::kPartition) {
    PartitionState& p = partitions_[c.items[0]];
    p.busy = true;
    --gpus_[p.gpu].free_partitions;
    buckets_[p.shape].Set(c.node, buckets_[p.shape].score(c.node) - 1);
  } else if (r.kind == RequestKind::kWholeGpus) {
    for (int i = 0; i < c.count; ++i) {
      gpus_[c.items[i]].busy = true;
    }
    buckets_[kShapeWhole].Set(c.node, buckets_[kShapeWhole].score(c.node) - c.count);
  } else {
    for (int i = 0; i < c.count; ++i) {
      GpuState& g = gpus_[c.items[i]];
      if (r.core_percent >= kFullCardCorePercent) {
        g.busy = true;
      } else {
        ++g.workers;
        g.free_core -= r.core_percent;
        g.free_memory_mib -= c.memory_mib;
      }
    }
    RefreshMgpuScores(c.node);
  }
  return AllocationId(slot.id);
}

void PlacementEngine::Undo(Slot& slot) {
  const Choice& c = slot.choice;
  NodeState& ns = nodes_[c.node];
  ns.free_cpu_milli += slot.cpu_milli;
  ns.free_host_mib += slot.host_memory_mib;
  if (slot.kind == RequestKind::kPartition) {
    PartitionState& p = partitions_[c.items[0]];
    p.busy = false;
    ++gpus_[p.gpu].free_partitions;
    buckets_[p.shape].Set(c.node, buckets_[p.shape].score(c.node) + 1);
  } else if (slot.kind == RequestKind::kWholeGpus) {
    for (int i = 0; i < c.count; ++i) {
      gpus_[c.items[i]].busy = false;
    }
    buckets_[kShapeWhole].Set(c.node, buckets_[kShapeWhole].score(c.node) + c.count);
  } else {
    for (int i = 0; i < c.count; ++i) {
      GpuState& g = gpus_[c.items[i]];
      if (slot.core_percent >= kFullCardCorePercent) {
        g.busy = false;
      } else {
        --g.workers;
        g.free_core += slot.core_percent;
        g.free_memory_mib += c.memory_mib;
      }
    }
    RefreshMgpuScores(c.node);
  }
  slot.id = 0;
  free_slots_.push_back(static_cast<uint32_t>(&slot - slots_.data()));
  --live_;
}

std::vector<PartitionUsage> PlacementEngine::Partitions() const {
  std::vector<uint64_t> holder(partitions_.size(), 0);
  for (const Slot& s : slots_) {
    if (s.id != 0 && s.kind == RequestKind::kPartition) holder[s.choice.items[0]] = s.id;
  }
  std::vector<PartitionUsage> out;
  out.reserve(partitions_.size());
  for (uint32_t p = 0; p < partitions_.size(); ++p) {
    const GpuState& g = gpus_[partitions_[p].gpu];
    out.push_back({specs_[g.node].name, g.index, partitions_[p].instance, AllocationId(holder[p])});
  }
  return out;
}

std::optional<HostUsage> PlacementEngine::Host(const std::string& node) const {
  auto it = node_by_name_.find(node);
  if (it == node_by_name_.end()) return std::nullopt;
  const NodeSpec& spec = specs_[it->second];
  const NodeState& ns = nodes_[it->second];
  return HostUsage{spec.cpu_milli, spec.cpu_milli - ns.free_cpu_milli, spec.host_memory_mib,
                   spec.host_memory_mib - ns.free_host_mib};
}

std::vector<GpuUsage> PlacementEngine::Gpus() const {
  std::vector<GpuUsage> out;
  out.reserve(gpus_.size());
  for (const GpuState& g : gpus_) {
    GpuUsage u;
    u.node = specs_[g.node].name;
    u.index = g.index;
    u.mode = g.mode;
    u.model = g.model;
    u.busy = g.busy;
    u.workers = g.workers;
    if (g.mode == GpuMode::kMgpu) {
      u.core_used = g.busy ? kFullCardCorePercent : kFullCardCorePercent - g.free_core;
      u.memory_capacity_mib = g.memory_capacity_mib;
      u.memory_used_mib =
          g.busy ? g.memory_capacity_mib : g.memory_capacity_mib - g.free_memory_mib;
    }
    u.partitions = g.partition_count;
    u.partitions_used = g.partition_count - g.free_partitions;
    out.push_back(u);
  }
  return out;
}

}  // namespace carve::core
