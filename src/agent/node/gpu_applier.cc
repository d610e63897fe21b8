#include "agent/node/gpu_applier.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "catalog/catalog.h"

namespace carve::agent::node {
namespace {

using Placed = std::pair<std::string, int>;  // (profile name, start)

std::string Describe(const std::vector<Placed>& parts) {
  std::vector<std::string> out;
  for (const auto& [name, start] : parts) out.push_back(fmt::format("{}@{}", name, start));
  return fmt::format("[{}]", fmt::join(out, ", "));
}

std::vector<Placed> PlacedOf(const std::vector<CarvedInstance>& carved) {
  std::vector<Placed> out;
  for (const auto& c : carved)
    out.emplace_back(c.profile != nullptr ? c.profile->name : "?", c.start);
  return out;
}

}  // namespace

GpuApplier::GpuApplier(Nvml& nvml, const Clock& clock, std::chrono::milliseconds retry_after)
    : nvml_(nvml), clock_(clock), retry_after_(retry_after), carver_(nvml) {}

Status GpuApplier::Init() {
  CARVE_ASSIGN_OR_RETURN(uint32_t count, nvml_.DeviceCount());
  gpus_.assign(count, Gpu{});
  for (uint32_t i = 0; i < count; ++i) {
    Result<NvmlDeviceInfo> info = nvml_.DeviceInfo(GpuIndex{i});
    if (!info) {
      gpus_[i].error = info.error().message;
      continue;
    }
    gpus_[i].uuid = info->uuid;
    gpus_[i].memory_mib = static_cast<int64_t>(info->memory_total_mib);
  }
  return OkStatus();
}

std::vector<std::string> GpuApplier::Apply(const std::vector<protocol::GpuDesired>& desired,
                                           const std::map<int, std::vector<std::string>>& busy) {
  std::vector<std::string> events;
  for (Gpu& gpu : gpus_) gpu.desired.reset();
  for (const protocol::GpuDesired& want : desired) {
    if (want.index < 0 || want.index >= gpu_count()) {
      events.push_back(fmt::format("desired state names GPU {} but this node has {} GPUs",
                                   want.index, gpu_count()));
      continue;
    }
    Gpu& gpu = gpus_[want.index];
    gpu.desired = want;
    if (gpu.applied == want) continue;
    std::vector<std::string> blockers;
    if (auto it = busy.find(want.index); it != busy.end()) blockers = it->second;
    std::sort(blockers.begin(), blockers.end());
    if (gpu.failed == want && gpu.failed_busy == blockers &&
        clock_.Now() - gpu.failed_at < retry_after_) {
      continue;  // Reported already; wait for a change or the long retry.
    }
    if (carve_delay_.count() > 0) {
      if (!carve_wait_) {
        std::this_thread::sleep_for(carve_delay_);
      } else if (!carve_wait_(carve_delay_)) {
        break;  // Stopping: this GPU and the rest stay as they were.
      }
    }
    gpu.applied.reset();
    gpu.carved.clear();
    gpu.pending_reset = false;
    Status s = ApplyOne(want.index, gpu, want, blockers);
    if (s.ok()) {
      gpu.applied = want;
      gpu.failed.reset();
      gpu.error.clear();
      spdlog::info("GPU {} carved as desired ({} partitions)", want.index, want.partitions.size());
      continue;
    }
    gpu.failed = want;
    gpu.failed_busy = blockers;
    gpu.failed_at = clock_.Now();
    gpu.error = s.error().message;
    spdlog::warn("GPU {}: {}", want.index, gpu.error);
    events.push_back(fmt::format("gpu {}: {}", want.index, gpu.error));
  }
  return events;
}

Status GpuApplier::ApplyOne(int index, Gpu& gpu, const protocol::GpuDesired& want,
                            const std::vector<std::string>& busy) {
  const GpuIndex g{static_cast<uint32_t>(index)};
  Result<MigMode> mode = nvml_.GetMigMode(g);
  if (!mode && mode.error().code != ErrorCode::kUnimplemented) return mode.error();
  const bool capable = mode.has_value();
  if (capable && mode->ResetPending()) {
    gpu.pending_reset = true;
    return FailedPrecondition(fmt::format(
        "GPU {} MIG mode is {} and becomes {} at the next GPU reset; carve does not reset GPUs "
        "and waits (reset the GPU, e.g. nvidia-smi -r -i {})",
        index, mode->current_enabled ? "enabled" : "disabled",
        mode->pending_enabled ? "enabled" : "disabled", index));
  }
  if (want.mig && !capable) {
    return FailedPrecondition(fmt::format("GPU {} does not support MIG; desired {} partitions",
                                          index, want.partitions.size()));
  }
  if (!busy.empty()) {
    CARVE_ASSIGN_OR_RETURN(bool same, LiveMatches(index, want));
    if (!same) {
      return FailedPrecondition(fmt::format(
          "GPU {} runs workloads [{}]; a GPU with running work is never re-carved (it is "
          "carved again once they stop)",
          index, fmt::join(busy, ", ")));
    }
  }
  if (!want.mig) {
    if (capable && mode->current_enabled) CARVE_RETURN_IF_ERROR(carver_.Clear(g));
    return OkStatus();
  }
  CARVE_ASSIGN_OR_RETURN(NvmlDeviceInfo info, nvml_.DeviceInfo(g));
  CARVE_ASSIGN_OR_RETURN(const catalog::GpuModel* model,
                         catalog::FindGpuByPciDeviceId(info.pci_device_id));
  core::Layout layout{model, {}};
  for (const protocol::PartitionSpec& p : want.partitions) {
    CARVE_ASSIGN_OR_RETURN(const catalog::MigProfile* profile, catalog::FindProfile(*model, p.profile));
    layout.instances.push_back({profile, p.start});
  }
  CARVE_ASSIGN_OR_RETURN(gpu.carved, carver_.Apply(g, layout));
  return OkStatus();
}

Result<bool> GpuApplier::LiveMatches(int index, const protocol::GpuDesired& want) {
  CARVE_ASSIGN_OR_RETURN(std::vector<protocol::CarvedPartition> live, LivePartitions(index));
  std::vector<Placed> have;
  for (const auto& p : live) have.emplace_back(p.profile, p.start);
  std::vector<Placed> wanted;
  for (const auto& p : want.partitions) wanted.emplace_back(p.profile, p.start);
  std::sort(have.begin(), have.end());
  std::sort(wanted.begin(), wanted.end());
  if (have != wanted) {
    spdlog::debug("GPU {} live {} differs from desired {}", index, Describe(have),
                  Describe(wanted));
  }
  return have == wanted;
}

Result<std::vector<protocol::CarvedPartition>> GpuApplier::LivePartitions(int index) {
  const GpuIndex g{static_cast<uint32_t>(index)};
  Result<MigMode> mode = nvml_.GetMigMode(g);
  if (!mode && mode.error().code == ErrorCode::kUnimplemented) {
    return std::vector<protocol::CarvedPartition>{};
  }
  if (!mode) return mode.error();
  if (!mode->current_enabled) return std::vector<protocol::CarvedPartition>{};
  CARVE_ASSIGN_OR_RETURN(NvmlDeviceInfo info, nvml_.DeviceInfo(g));
  const catalog::GpuModel* model = catalog::FindGpuByPciDeviceId(info.pci_device_id).value_or(
      static_cast<const catalog::GpuModel*>(nullptr));
  CARVE_ASSIGN_OR_RETURN(std::vector<GpuInstanceInfo> instances, nvml_.ListGpuInstances(g));
  CARVE_ASSIGN_OR_RETURN(std::vector<MigDeviceInfo> devices, nvml_.ListMigDevices(g));
  std::vector<protocol::CarvedPartition> out;
  for (const GpuInstanceInfo& gi : instances) {
    protocol::CarvedPartition p;
    const catalog::MigProfile* profile =
        model == nullptr ? nullptr : catalog::FindProfileById(*model, gi.profile_id);
    p.profile = profile == nullptr ? fmt::format("profile-{}", gi.profile_id.value())
                                   : std::string(profile->name);
    p.start = static_cast<int>(gi.placement.start);
    for (const MigDeviceInfo& d : devices) {
      if (d.gpu_instance == gi.id) p.uuid = d.uuid;
    }
    out.push_back(std::move(p));
  }
  return out;
}

Result<std::string> GpuApplier::PartitionUuid(int gpu, int start) const {
  if (gpu < 0 || gpu >= gpu_count()) {
    return NotFound(fmt::format("GPU {} does not exist; this node has {}", gpu, gpu_count()));
  }
  const Gpu& g = gpus_[gpu];
  if (!g.applied || !g.desired || *g.applied != *g.desired || !g.applied->mig) {
    return FailedPrecondition(fmt::format(
        "GPU {} is not carved as desired yet{}", gpu, g.error.empty() ? "" : ": " + g.error));
  }
  for (const auto& carved : g.carved) {
    if (carved.start == start) return carved.mig_uuid;
  }
  return NotFound(fmt::format("GPU {} has no partition starting at slice {} (its partitions: {})",
                              gpu, start, Describe(PlacedOf(g.carved))));
}

Result<std::string> GpuApplier::GpuUuid(int gpu) const {
  if (gpu < 0 || gpu >= gpu_count() || gpus_[gpu].uuid.empty()) {
    return NotFound(fmt::format("GPU {} is unknown or unreadable on this node ({} GPUs)", gpu,
                                gpu_count()));
  }
  return gpus_[gpu].uuid;
}

Result<int64_t> GpuApplier::GpuMemoryMib(int gpu) const {
  CARVE_RETURN_IF_ERROR(GpuUuid(gpu));
  return gpus_[gpu].memory_mib;
}

bool GpuApplier::AllApplied() const {
  return std::all_of(gpus_.begin(), gpus_.end(),
                     [](const Gpu& g) { return !g.desired || g.applied == g.desired; });
}

std::vector<protocol::GpuStatus> GpuApplier::Statuses(bool with_metrics) {
  std::vector<protocol::GpuStatus> out;
  for (int i = 0; i < gpu_count(); ++i) {
    const Gpu& gpu = gpus_[i];
    const GpuIndex g{static_cast<uint32_t>(i)};
    protocol::GpuStatus s;
    s.index = i;
    s.applied = !gpu.desired || gpu.applied == gpu.desired;
    s.pending_reset = gpu.pending_reset;
    s.error = s.applied ? "" : gpu.error;
    if (Result<MigMode> mode = nvml_.GetMigMode(g); mode.has_value()) {
      s.mig = mode->current_enabled;
    }
    if (gpu.applied && gpu.applied->mig && s.applied) {
      for (const CarvedInstance& c : gpu.carved) {
        s.partitions.push_back({std::string(c.profile->name), c.start, c.mig_uuid});
      }
    } else if (auto live = LivePartitions(i); live.has_value()) {
      s.partitions = std::move(live).value();
    } else if (s.error.empty()) {
      s.error = live.error().message;
    }
    if (with_metrics) {
      if (auto u = nvml_.Utilization(g); u.has_value()) {
        s.utilization_percent = static_cast<int>(u->gpu_percent);
      }
      if (auto info = nvml_.DeviceInfo(g); info.has_value()) {
        s.memory_used_mib = static_cast<int64_t>(info->memory_used_mib);
      }
      if (auto procs = nvml_.ComputeProcesses(g); procs.has_value()) {
        for (const GpuProcess& p : *procs) {
          s.processes.push_back({p.pid, static_cast<int64_t>(p.used_memory_mib)});
        }
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace carve::agent::node
