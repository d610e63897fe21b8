#include "agent/nvml/fake_nvml.h"

#include <fmt/format.h>

#include "agent/nvml/nvml_error.h"

namespace carve::agent {
namespace {

constexpr uint64_t kMiB = 1024ull * 1024ull;
constexpr unsigned int kNoInstance = 0xFFFFFFFFu;

// Turns a core return code into a Status with the same wording LibNvml uses.
Status Check(nvmlReturn_t rc, std::string_view call) {
  if (rc == NVML_SUCCESS) {
    return OkStatus();
  }
  return NvmlError(rc, call);
}

}  // namespace

FakeNvml::FakeNvml(const FakeNodeConfig& config) : core_(config) { (void)core_.Init(); }

Result<std::unique_ptr<FakeNvml>> FakeNvml::FromText(std::string_view config_text) {
  CARVE_ASSIGN_OR_RETURN(FakeNodeConfig config, ParseFakeNodeConfig(config_text));
  return std::make_unique<FakeNvml>(config);
}

Status FakeNvml::Init() { return Check(core_.Init(), "nvmlInit_v2()"); }
Status FakeNvml::Shutdown() { return Check(core_.Shutdown(), "nvmlShutdown()"); }

Result<std::string> FakeNvml::DriverVersion() {
  std::string v;
  CARVE_RETURN_IF_ERROR(Check(core_.DriverVersion(&v), "nvmlSystemGetDriverVersion()"));
  return v;
}

Result<uint32_t> FakeNvml::DeviceCount() {
  unsigned int n = 0;
  CARVE_RETURN_IF_ERROR(Check(core_.DeviceCount(&n), "nvmlDeviceGetCount_v2()"));
  return static_cast<uint32_t>(n);
}

Result<NvmlDeviceInfo> FakeNvml::DeviceInfo(GpuIndex gpu) {
  FakeDeviceView v;
  CARVE_RETURN_IF_ERROR(Check(core_.Device(gpu.value(), &v),
                              fmt::format("nvmlDeviceGetHandleByIndex_v2(gpu {})", gpu.value())));
  return NvmlDeviceInfo{v.uuid,
                        v.name,
                        v.pci_device_id,
                        v.bus_id,
                        v.memory_total_bytes / kMiB,
                        v.memory_used_bytes / kMiB};
}

Result<MigMode> FakeNvml::GetMigMode(GpuIndex gpu) {
  unsigned int current = 0;
  unsigned int pending = 0;
  CARVE_RETURN_IF_ERROR(Check(core_.MigMode(gpu.value(), &current, &pending),
                              fmt::format("nvmlDeviceGetMigMode(gpu {})", gpu.value())));
  return MigMode{current == NVML_DEVICE_MIG_ENABLE, pending == NVML_DEVICE_MIG_ENABLE};
}

Result<std::optional<GpuInstanceProfileInfo>> FakeNvml::GetGpuInstanceProfile(
    GpuIndex gpu, uint32_t profile_enum) {
  const catalog::MigProfile* p = nullptr;
  nvmlReturn_t rc = core_.GpuInstanceProfile(gpu.value(), profile_enum, &p);
  if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) {
    return std::optional<GpuInstanceProfileInfo>();
  }
  CARVE_RETURN_IF_ERROR(Check(rc, fmt::format("nvmlDeviceGetGpuInstanceProfileInfoV(gpu {}, "
                                              "profile {})",
                                              gpu.value(), profile_enum)));
  GpuInstanceProfileInfo info;
  info.nvml_enum = profile_enum;
  info.id = p->id;
  info.name = std::string(p->name);
  info.slice_count = static_cast<uint32_t>(p->compute_slices);
  info.instance_count = static_cast<uint32_t>(p->max_count);
  info.multiprocessor_count = static_cast<uint32_t>(p->sms);
  info.memory_mib = static_cast<uint64_t>(p->memory_mib);
  return std::optional<GpuInstanceProfileInfo>(std::move(info));
}

Result<std::vector<GiPlacement>> FakeNvml::PossiblePlacements(GpuIndex gpu, NvmlProfileId profile) {
  std::vector<nvmlGpuInstancePlacement_t> raw;
  CARVE_RETURN_IF_ERROR(Check(core_.Placements(gpu.value(), profile.value(), &raw),
                              fmt::format("nvmlDeviceGetGpuInstancePossiblePlacements_v2(gpu {}, "
                                          "profile id {})",
                                          gpu.value(), profile.value())));
  std::vector<GiPlacement> out;
  out.reserve(raw.size());
  for (const auto& p : raw) {
    out.push_back(GiPlacement{p.start, p.size});
  }
  return out;
}

Result<GpuInstanceId> FakeNvml::CreateGpuInstance(GpuIndex gpu, NvmlProfileId profile,
                                                  GiPlacement placement) {
  unsigned int id = 0;
  CARVE_RETURN_IF_ERROR(Check(
      core_.CreateGpuInstance(gpu.value(), profile.value(), {placement.start, placement.size}, &id),
      fmt::format("nvmlDeviceCreateGpuInstanceWithPlacement(gpu {}, profile id {}, start "
                  "{}, size {})",
                  gpu.value(), profile.value(), placement.start, placement.size)));
  return GpuInstanceId{id};
}

Result<ComputeInstanceId> FakeNvml::CreateFullComputeInstance(GpuIndex gpu, GpuInstanceId gi) {
  const std::string where = fmt::format("(gpu {}, gpu instance {})", gpu.value(), gi.value());
  std::optional<nvmlComputeInstanceProfileInfo_t> best;
  for (unsigned int p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlComputeInstanceProfileInfo_t info{};
    nvmlReturn_t rc = core_.ComputeInstanceProfile(gpu.value(), gi.value(), p, &info);
    if (rc == NVML_ERROR_NOT_SUPPORTED) {
      continue;
    }
    CARVE_RETURN_IF_ERROR(Check(rc, "nvmlGpuInstanceGetComputeInstanceProfileInfo" + where));
    if (!best || info.sliceCount > best->sliceCount) {
      best = info;
    }
  }
  if (!best) {
    return Internal("gpu instance offers no compute-instance profile " + where);
  }
  unsigned int id = 0;
  CARVE_RETURN_IF_ERROR(Check(core_.CreateComputeInstance(gpu.value(), gi.value(), best->id, &id),
                              "nvmlGpuInstanceCreateComputeInstance" + where));
  return ComputeInstanceId{id};
}

Status FakeNvml::DestroyComputeInstance(GpuIndex gpu, GpuInstanceId gi, ComputeInstanceId ci) {
  return Check(core_.DestroyComputeInstance(gpu.value(), gi.value(), ci.value()),
               fmt::format("nvmlComputeInstanceDestroy(gpu {}, gpu instance {}, compute "
                           "instance {})",
                           gpu.value(), gi.value(), ci.value()));
}

Status FakeNvml::DestroyGpuInstance(GpuIndex gpu, GpuInstanceId gi) {
  return Check(
      core_.DestroyGpuInstance(gpu.value(), gi.value()),
      fmt::format("nvmlGpuInstanceDestroy(gpu {}, gpu instance {})", gpu.value(), gi.value()));
}

Result<std::vector<GpuInstanceInfo>> FakeNvml::ListGpuInstances(GpuIndex gpu) {
  std::vector<const FakeGpuInstance*> gis;
  CARVE_RETURN_IF_ERROR(Check(core_.GpuInstances(gpu.value(), std::nullopt, &gis),
                              fmt::format("nvmlDeviceGetGpuInstances(gpu {})", gpu.value())));
  std::vector<GpuInstanceInfo> out;
  for (const FakeGpuInstance* gi : gis) {
    GpuInstanceInfo info;
    info.id = GpuInstanceId{gi->id};
    info.profile_id = gi->profile->id;
    info.placement = GiPlacement{gi->start, static_cast<uint32_t>(gi->profile->placement_size)};
    for (const FakeComputeInstance& ci : gi->compute_instances) {
      info.compute_instances.push_back(
          ComputeInstanceInfo{ComputeInstanceId{ci.id}, ci.profile_id, ci.slices});
    }
    out.push_back(std::move(info));
  }
  return out;
}

Result<std::vector<MigDeviceInfo>> FakeNvml::ListMigDevices(GpuIndex gpu) {
  unsigned int max = 0;
  CARVE_RETURN_IF_ERROR(Check(core_.MaxMigDeviceCount(gpu.value(), &max),
                              fmt::format("nvmlDeviceGetMaxMigDeviceCount(gpu {})", gpu.value())));
  std::vector<MigDeviceInfo> out;
  for (unsigned int k = 0; k < max; ++k) {
    unsigned int gi = 0;
    unsigned int ci = 0;
    std::string uuid;
    nvmlReturn_t rc = core_.MigDevice(gpu.value(), k, &gi, &ci, &uuid);
    if (rc == NVML_ERROR_NOT_FOUND) {
      continue;
    }
    CARVE_RETURN_IF_ERROR(Check(rc, fmt::format("nvmlDeviceGetMigDeviceHandleByIndex(gpu {}, "
                                                "mig index {})",
                                                gpu.value(), k)));
    out.push_back(MigDeviceInfo{GpuInstanceId{gi}, ComputeInstanceId{ci}, std::move(uuid)});
  }
  return out;
}

Result<GpuUtilization> FakeNvml::Utilization(GpuIndex gpu) {
  nvmlUtilization_t u{};
  CARVE_RETURN_IF_ERROR(Check(core_.Utilization(gpu.value(), &u),
                              fmt::format("nvmlDeviceGetUtilizationRates(gpu {})", gpu.value())));
  return GpuUtilization{u.gpu, u.memory};
}

void FakeNvml::AddProcess(uint32_t gpu, uint32_t pid, uint64_t used_mib) {
  std::lock_guard lock(processes_mu_);
  core_.AddProcess(gpu, pid, used_mib);
}

Result<std::vector<GpuProcess>> FakeNvml::ComputeProcesses(GpuIndex gpu) {
  std::vector<nvmlProcessInfo_t> raw;
  std::lock_guard lock(processes_mu_);
  CARVE_RETURN_IF_ERROR(
      Check(core_.Processes(gpu.value(), &raw),
            fmt::format("nvmlDeviceGetComputeRunningProcesses_v3(gpu {})", gpu.value())));
  std::vector<GpuProcess> out;
  for (const auto& r : raw) {
    GpuProcess p;
    p.pid = r.pid;
    p.used_memory_mib = r.usedGpuMemory / kMiB;
    if (r.gpuInstanceId != kNoInstance) {
      p.gpu_instance = GpuInstanceId{r.gpuInstanceId};
      p.compute_instance = ComputeInstanceId{r.computeInstanceId};
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace carve::agent
