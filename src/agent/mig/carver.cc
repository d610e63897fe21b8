#include "agent/mig/carver.h"

#include <fmt/format.h>

#include <algorithm>

namespace carve::agent {
namespace {

std::string Describe(const CarvedInstance& c) {
  return fmt::format("{}@{}", c.profile->name, c.start);
}

std::string Describe(const core::PlacedInstance& p) {
  return fmt::format("{}@{}", p.profile->name, p.start);
}

// The existing instance holds the wanted one: same profile, same start, and exactly one
// compute instance spanning it.
bool Holds(const GpuInstanceInfo& have, const core::PlacedInstance& want) {
  return have.profile_id == want.profile->id &&
         have.placement.start == static_cast<uint32_t>(want.start) &&
         have.compute_instances.size() == 1 &&
         have.compute_instances[0].slice_count ==
             static_cast<uint32_t>(want.profile->compute_slices);
}

}  // namespace

Status Carver::CheckMigReady(GpuIndex gpu, const NvmlDeviceInfo& device) {
  auto mode = nvml_.GetMigMode(gpu);
  if (!mode) {
    if (mode.error().code != ErrorCode::kUnimplemented) {
      return mode.error();
    }
    return FailedPrecondition(fmt::format("GPU {} ({}) does not support MIG with this driver: {}",
                                          gpu.value(), device.name, mode.error().message));
  }
  // A pending mode change only takes effect after a GPU reset, which carve never does itself:
  // report it once and let the operator reset, rather than retrying in a loop.
  if (mode->ResetPending()) {
    return FailedPrecondition(fmt::format(
        "GPU {} ({}) has a MIG mode change pending a GPU reset (now {}, after reset {}); reset "
        "the GPU (nvidia-smi -r -i {}) before carving",
        gpu.value(), device.uuid, mode->current_enabled ? "enabled" : "disabled",
        mode->pending_enabled ? "enabled" : "disabled", gpu.value()));
  }
  if (!mode->current_enabled) {
    return FailedPrecondition(fmt::format(
        "GPU {} ({}) has MIG mode disabled; enable it (nvidia-smi -i {} -mig 1) and reset the GPU "
        "before carving",
        gpu.value(), device.uuid, gpu.value()));
  }
  return OkStatus();
}

Status Carver::CheckIdle(GpuIndex gpu, std::string_view action) {
  CARVE_ASSIGN_OR_RETURN(auto processes, nvml_.ComputeProcesses(gpu));
  if (processes.empty()) {
    return OkStatus();
  }
  std::vector<uint32_t> pids;
  pids.reserve(processes.size());
  for (const auto& p : processes) {
    pids.push_back(p.pid);
  }
  return FailedPrecondition(fmt::format(
      "GPU {} has {} running compute process(es) (pids {}); carve never {} a GPU with running "
      "work",
      gpu.value(), pids.size(), fmt::join(pids, ", "), action));
}

Status Carver::CheckPlacements(GpuIndex gpu, const core::Layout& layout) {
  for (const core::PlacedInstance& want : layout.instances) {
    CARVE_ASSIGN_OR_RETURN(auto allowed, nvml_.PossiblePlacements(gpu, want.profile->id));
    const GiPlacement p{static_cast<uint32_t>(want.start),
                        static_cast<uint32_t>(want.profile->placement_size)};
    if (std::find(allowed.begin(), allowed.end(), p) != allowed.end()) {
      continue;
    }
    std::vector<std::string> text;
    text.reserve(allowed.size());
    for (const auto& a : allowed) {
      text.push_back(fmt::format("{}:{}", a.start, a.size));
    }
    return InvalidArgument(fmt::format(
        "layout places {} at start {} (size {}) but NVML on GPU {} allows only [{}] for profile "
        "id {}",
        want.profile->name, want.start, p.size, gpu.value(), fmt::join(text, ", "),
        want.profile->id.value()));
  }
  return OkStatus();
}

Result<std::vector<CarvedInstance>> Carver::Apply(GpuIndex gpu, const core::Layout& layout) {
  if (layout.gpu == nullptr) {
    return InvalidArgument("layout names no GPU model");
  }
  for (const auto& want : layout.instances) {
    if (want.profile == nullptr) {
      return InvalidArgument("layout has an instance with no profile");
    }
  }
  CARVE_ASSIGN_OR_RETURN(NvmlDeviceInfo device, nvml_.DeviceInfo(gpu));
  const auto& ids = layout.gpu->pci_device_ids;
  if (std::find(ids.begin(), ids.end(), device.pci_device_id) == ids.end()) {
    return InvalidArgument(fmt::format("layout is for {} but GPU {} is {} (PCI device id {:#010x})",
                                       layout.gpu->id, gpu.value(), device.name,
                                       device.pci_device_id));
  }
  CARVE_RETURN_IF_ERROR(CheckMigReady(gpu, device));
  CARVE_ASSIGN_OR_RETURN(auto existing, nvml_.ListGpuInstances(gpu));
  if (auto adopted = Adopt(gpu, layout, existing); adopted.has_value()) {
    return adopted;
  }

  CARVE_RETURN_IF_ERROR(CheckIdle(gpu, "re-carves"));
  CARVE_RETURN_IF_ERROR(CheckPlacements(gpu, layout));
  if (!existing.empty()) {
    CARVE_RETURN_IF_ERROR(Clear(gpu));
  }
  return Create(gpu, layout);
}

Result<std::vector<CarvedInstance>> Carver::Adopt(GpuIndex gpu, const core::Layout& layout,
                                                  const std::vector<GpuInstanceInfo>& existing) {
  if (existing.size() != layout.instances.size()) {
    return NotFound("layout differs");
  }
  std::vector<bool> used(existing.size(), false);
  std::vector<CarvedInstance> carved;
  for (const core::PlacedInstance& want : layout.instances) {
    size_t k = 0;
    while (k < existing.size() && (used[k] || !Holds(existing[k], want))) {
      ++k;
    }
    if (k == existing.size()) {
      return NotFound("layout differs");
    }
    used[k] = true;
    carved.push_back(CarvedInstance{want.profile, want.start, existing[k].id,
                                    existing[k].compute_instances[0].id, ""});
  }
  CARVE_RETURN_IF_ERROR(FillUuids(gpu, carved));
  return carved;
}

Result<std::vector<CarvedInstance>> Carver::Create(GpuIndex gpu, const core::Layout& layout) {
  std::vector<CarvedInstance> carved;
  auto fail = [&](const core::PlacedInstance& want, size_t i, const Error& e) -> Error {
    Error out{e.code, fmt::format("carving instance {} of {} ({}) on GPU {}: {}", i + 1,
                                  layout.instances.size(), Describe(want), gpu.value(), e.message)};
    if (Status undo = Rollback(gpu, carved); !undo.ok()) {
      out = Internal(out.message +
                     "; rollback failed, GPU left partly carved: " + undo.error().message);
    }
    return out;
  };
  for (size_t i = 0; i < layout.instances.size(); ++i) {
    const core::PlacedInstance& want = layout.instances[i];
    auto gi =
        nvml_.CreateGpuInstance(gpu, want.profile->id,
                                GiPlacement{static_cast<uint32_t>(want.start),
                                            static_cast<uint32_t>(want.profile->placement_size)});
    if (!gi) {
      return fail(want, i, gi.error());
    }
    carved.push_back(CarvedInstance{want.profile, want.start, *gi, ComputeInstanceId{}, ""});
    auto ci = nvml_.CreateFullComputeInstance(gpu, *gi);
    if (!ci) {
      // Only the GPU instance exists: roll it back without a compute instance to destroy.
      carved.pop_back();
      if (Status s = nvml_.DestroyGpuInstance(gpu, *gi); !s.ok()) {
        return Internal(fmt::format(
            "carving {} on GPU {}: {}; and destroying its GPU instance "
            "{} failed: {}",
            Describe(want), gpu.value(), ci.error().message, gi->value(), s.error().message));
      }
      return fail(want, i, ci.error());
    }
    carved.back().compute_instance = *ci;
  }
  if (Status s = FillUuids(gpu, carved); !s.ok()) {
    Error e = s.error();
    if (Status undo = Rollback(gpu, carved); !undo.ok()) {
      return Internal(e.message + "; rollback failed: " + undo.error().message);
    }
    return e;
  }
  return carved;
}

Status Carver::FillUuids(GpuIndex gpu, std::vector<CarvedInstance>& carved) {
  CARVE_ASSIGN_OR_RETURN(auto migs, nvml_.ListMigDevices(gpu));
  for (CarvedInstance& c : carved) {
    auto it = std::find_if(migs.begin(), migs.end(), [&](const MigDeviceInfo& m) {
      return m.gpu_instance == c.gpu_instance && m.compute_instance == c.compute_instance;
    });
    if (it == migs.end()) {
      return Internal(fmt::format(
          "GPU {}: no MIG device for {} (gpu instance {}, compute "
          "instance {}) after carving",
          gpu.value(), Describe(c), c.gpu_instance.value(), c.compute_instance.value()));
    }
    c.mig_uuid = it->uuid;
  }
  return OkStatus();
}

Status Carver::Rollback(GpuIndex gpu, std::span<const CarvedInstance> carved) {
  std::vector<std::string> failures;
  for (auto it = carved.rbegin(); it != carved.rend(); ++it) {
    if (Status s = nvml_.DestroyComputeInstance(gpu, it->gpu_instance, it->compute_instance);
        !s.ok()) {
      failures.push_back(s.error().message);
      continue;  // Its GPU instance cannot go while the compute instance remains.
    }
    if (Status s = nvml_.DestroyGpuInstance(gpu, it->gpu_instance); !s.ok()) {
      failures.push_back(s.error().message);
    }
  }
  if (failures.empty()) {
    return OkStatus();
  }
  return Internal(fmt::format("{}", fmt::join(failures, "; ")));
}

Status Carver::Teardown(GpuIndex gpu, std::span<const CarvedInstance> carved) {
  CARVE_RETURN_IF_ERROR(CheckIdle(gpu, "tears down"));
  return Rollback(gpu, carved);
}

Status Carver::Clear(GpuIndex gpu) {
  CARVE_RETURN_IF_ERROR(CheckIdle(gpu, "tears down"));
  CARVE_ASSIGN_OR_RETURN(auto existing, nvml_.ListGpuInstances(gpu));
  std::sort(existing.begin(), existing.end(),
            [](const auto& a, const auto& b) { return a.id > b.id; });
  for (const GpuInstanceInfo& gi : existing) {
    for (auto ci = gi.compute_instances.rbegin(); ci != gi.compute_instances.rend(); ++ci) {
      CARVE_RETURN_IF_ERROR(nvml_.DestroyComputeInstance(gpu, gi.id, ci->id));
    }
    CARVE_RETURN_IF_ERROR(nvml_.DestroyGpuInstance(gpu, gi.id));
  }
  return OkStatus();
}

}  // namespace carve::agent
