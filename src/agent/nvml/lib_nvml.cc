#include "agent/nvml/lib_nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "agent/nvml/nvml_error.h"

namespace carve::agent {

struct LibNvml::Api {
// X-macro over nvml_abi.h: `name` and `params` are a declarator and a parameter list, which
// cannot be parenthesised.
// NOLINTNEXTLINE(bugprone-macro-parentheses)
#define CARVE_NVML_MEMBER(name, params) nvmlReturn_t(*name) params = nullptr;
  CARVE_NVML_FUNCTIONS(CARVE_NVML_MEMBER)
#undef CARVE_NVML_MEMBER
};

namespace {

constexpr uint64_t kMiB = 1024ull * 1024ull;
// nvmlProcessInfo_t.gpuInstanceId for a process that is not on a MIG device.
constexpr unsigned int kNoInstance = 0xFFFFFFFFu;

// NVML writes NUL-terminated strings into fixed buffers.
std::string FromBuffer(const char* buf, size_t size) {
  return std::string(buf, strnlen(buf, size));
}

// Profiles the driver does not offer on this GPU answer NOT_SUPPORTED (or INVALID_ARGUMENT for
// enums newer than the driver); both mean "no such row", not a failure.
bool IsAbsentProfile(nvmlReturn_t rc) {
  return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT;
}

}  // namespace

Result<std::unique_ptr<LibNvml>> LibNvml::Load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return NotFound(fmt::format("dlopen({}) failed: {}; is the NVIDIA driver installed?", path,
                                why != nullptr ? why : "unknown error"));
  }
  auto api = std::make_unique<Api>();
  std::vector<std::string> missing;
  // NOLINTBEGIN(bugprone-macro-parentheses): X-macro arguments are a name and a parameter list.
#define CARVE_NVML_RESOLVE(name, params)                                      \
  api->name = reinterpret_cast<nvmlReturn_t(*) params>(dlsym(handle, #name)); \
  if (api->name == nullptr) missing.emplace_back(#name);
  CARVE_NVML_FUNCTIONS(CARVE_NVML_RESOLVE)
#undef CARVE_NVML_RESOLVE
  // NOLINTEND(bugprone-macro-parentheses)
  if (!missing.empty()) {
    dlclose(handle);
    return Unimplemented(fmt::format(
        "{} lacks NVML entry points carve needs: {}; the driver is too old or this is not NVML",
        path, fmt::join(missing, ", ")));
  }
  return std::unique_ptr<LibNvml>(new LibNvml(handle, std::move(api)));
}

LibNvml::LibNvml(void* handle, std::unique_ptr<Api> api) : handle_(handle), api_(std::move(api)) {}

LibNvml::~LibNvml() {
  if (initialized_) {
    (void)api_->nvmlShutdown();
  }
  api_.reset();
  dlclose(handle_);
}

Status LibNvml::Init() {
  nvmlReturn_t rc = api_->nvmlInit_v2();
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, "nvmlInit_v2()");
  }
  initialized_ = true;
  return OkStatus();
}

Status LibNvml::Shutdown() {
  nvmlReturn_t rc = api_->nvmlShutdown();
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, "nvmlShutdown()");
  }
  initialized_ = false;
  return OkStatus();
}

Result<std::string> LibNvml::DriverVersion() {
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  nvmlReturn_t rc = api_->nvmlSystemGetDriverVersion(buf, sizeof(buf));
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, "nvmlSystemGetDriverVersion()");
  }
  return FromBuffer(buf, sizeof(buf));
}

Result<uint32_t> LibNvml::DeviceCount() {
  unsigned int count = 0;
  nvmlReturn_t rc = api_->nvmlDeviceGetCount_v2(&count);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, "nvmlDeviceGetCount_v2()");
  }
  return static_cast<uint32_t>(count);
}

Result<nvmlDevice_t> LibNvml::Device(GpuIndex gpu) {
  nvmlDevice_t dev = nullptr;
  nvmlReturn_t rc = api_->nvmlDeviceGetHandleByIndex_v2(gpu.value(), &dev);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlDeviceGetHandleByIndex_v2(gpu {})", gpu.value()));
  }
  return dev;
}

Result<nvmlGpuInstance_t> LibNvml::GpuInstance(GpuIndex gpu, GpuInstanceId gi) {
  CARVE_ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  nvmlGpuInstance_t handle = nullptr;
  nvmlReturn_t rc = api_->nvmlDeviceGetGpuInstanceById(dev, gi.value(), &handle);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlDeviceGetGpuInstanceById(gpu {}, gpu instance {})",
                                     gpu.value(), gi.value()));
  }
  return handle;
}

Result<NvmlDeviceInfo> LibNvml::DeviceInfo(GpuIndex gpu) {
  CARVE_ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  const uint32_t i = gpu.value();
  NvmlDeviceInfo info;
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  nvmlReturn_t rc = api_->nvmlDeviceGetUUID(dev, uuid, sizeof(uuid));
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlDeviceGetUUID(gpu {})", i));
  }
  info.uuid = FromBuffer(uuid, sizeof(uuid));
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  rc = api_->nvmlDeviceGetName(dev, name, sizeof(name));
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlDeviceGetName(gpu {})", i));
  }
  info.name = FromBuffer(name, sizeof(name));
  nvmlPciInfo_t pci = {};
  rc = api_->nvmlDeviceGetPciInfo_v3(dev, &pci);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlDeviceGetPciInfo_v3(gpu {})", i));
  }
  info.pci_device_id = pci.pciDeviceId;
  info.pci_bus_id = FromBuffer(pci.busId, sizeof(pci.busId));
  nvmlMemory_v2_t memory = {};
  memory.version = nvmlMemory_v2;
  rc = api_->nvmlDeviceGetMemoryInfo_v2(dev, &memory);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlDeviceGetMemoryInfo_v2(gpu {})", i));
  }
  info.memory_total_mib = memory.total / kMiB;
  info.memory_used_mib = memory.used / kMiB;
  return info;
}

Result<MigMode> LibNvml::GetMigMode(GpuIndex gpu) {
  CARVE_ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  unsigned int current = 0;
  unsigned int pending = 0;
  nvmlReturn_t rc = api_->nvmlDeviceGetMigMode(dev, &current, &pending);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlDeviceGetMigMode(gpu {})", gpu.value()));
  }
  return MigMode{current == NVML_DEVICE_MIG_ENABLE, pending == NVML_DEVICE_MIG_ENABLE};
}

Result<std::optional<GpuInstanceProfileInfo>> LibNvml::GetGpuInstanceProfile(
    GpuIndex gpu, uint32_t profile_enum) {
  CARVE_ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  nvmlGpuInstanceProfileInfo_v2_t raw = {};
  raw.version = nvmlGpuInstanceProfileInfo_v2;
  nvmlReturn_t rc = api_->nvmlDeviceGetGpuInstanceProfileInfoV(dev, profile_enum, &raw);
  if (IsAbsentProfile(rc)) {
    return std::optional<GpuInstanceProfileInfo>();
  }
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlDeviceGetGpuInstanceProfileInfoV(gpu {}, profile {})",
                                     gpu.value(), profile_enum));
  }
  GpuInstanceProfileInfo info;
  info.nvml_enum = profile_enum;
  info.id = NvmlProfileId{raw.id};
  info.name = FromBuffer(raw.name, sizeof(raw.name));
  info.slice_count = raw.sliceCount;
  info.instance_count = raw.instanceCount;
  info.multiprocessor_count = raw.multiprocessorCount;
  info.memory_mib = raw.memorySizeMB;
  return std::optional<GpuInstanceProfileInfo>(std::move(info));
}

Result<std::vector<GiPlacement>> LibNvml::PossiblePlacements(GpuIndex gpu, NvmlProfileId profile) {
  CARVE_ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  const std::string call = fmt::format(
      "nvmlDeviceGetGpuInstancePossiblePlacements_v2(gpu {}, "
      "profile id {})",
      gpu.value(), profile.value());
  // A null buffer asks for the count first (documented NVML behaviour).
  unsigned int count = 0;
  nvmlReturn_t rc =
      api_->nvmlDeviceGetGpuInstancePossiblePlacements_v2(dev, profile.value(), nullptr, &count);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, call);
  }
  std::vector<nvmlGpuInstancePlacement_t> raw(count);
  if (count > 0) {
    rc = api_->nvmlDeviceGetGpuInstancePossiblePlacements_v2(dev, profile.value(), raw.data(),
                                                             &count);
    if (rc != NVML_SUCCESS) {
      return NvmlError(rc, call);
    }
    raw.resize(std::min<size_t>(count, raw.size()));
  }
  std::vector<GiPlacement> out;
  out.reserve(raw.size());
  for (const auto& p : raw) {
    out.push_back(GiPlacement{p.start, p.size});
  }
  return out;
}

Result<GpuInstanceId> LibNvml::CreateGpuInstance(GpuIndex gpu, NvmlProfileId profile,
                                                 GiPlacement placement) {
  CARVE_ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  const nvmlGpuInstancePlacement_t raw{placement.start, placement.size};
  nvmlGpuInstance_t gi = nullptr;
  nvmlReturn_t rc = api_->nvmlDeviceCreateGpuInstanceWithPlacement(dev, profile.value(), &raw, &gi);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc,
                     fmt::format("nvmlDeviceCreateGpuInstanceWithPlacement(gpu {}, profile id "
                                 "{}, start {}, size {})",
                                 gpu.value(), profile.value(), placement.start, placement.size));
  }
  nvmlGpuInstanceInfo_t info = {};
  rc = api_->nvmlGpuInstanceGetInfo(gi, &info);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlGpuInstanceGetInfo(gpu {}, new instance)", gpu.value()));
  }
  return GpuInstanceId{info.id};
}

Result<ComputeInstanceId> LibNvml::CreateFullComputeInstance(GpuIndex gpu, GpuInstanceId gi) {
  CARVE_ASSIGN_OR_RETURN(nvmlGpuInstance_t handle, GpuInstance(gpu, gi));
  // The full-size CI profile is the one with the most slices this GI offers; the GI answers
  // NOT_SUPPORTED for CI profiles larger than itself.
  std::optional<nvmlComputeInstanceProfileInfo_t> best;
  for (unsigned int p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlComputeInstanceProfileInfo_t info = {};
    nvmlReturn_t rc = api_->nvmlGpuInstanceGetComputeInstanceProfileInfo(
        handle, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (IsAbsentProfile(rc)) {
      continue;
    }
    if (rc != NVML_SUCCESS) {
      return NvmlError(rc, fmt::format("nvmlGpuInstanceGetComputeInstanceProfileInfo(gpu {}, "
                                       "gpu instance {}, profile {})",
                                       gpu.value(), gi.value(), p));
    }
    if (!best || info.sliceCount > best->sliceCount) {
      best = info;
    }
  }
  if (!best) {
    return Internal(fmt::format("gpu {} gpu instance {} offers no compute-instance profile",
                                gpu.value(), gi.value()));
  }
  nvmlComputeInstance_t ci = nullptr;
  nvmlReturn_t rc = api_->nvmlGpuInstanceCreateComputeInstance(handle, best->id, &ci);
  const std::string where = fmt::format("(gpu {}, gpu instance {}, compute profile id {})",
                                        gpu.value(), gi.value(), best->id);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, "nvmlGpuInstanceCreateComputeInstance" + where);
  }
  nvmlComputeInstanceInfo_t info = {};
  rc = api_->nvmlComputeInstanceGetInfo_v2(ci, &info);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, "nvmlComputeInstanceGetInfo_v2" + where);
  }
  return ComputeInstanceId{info.id};
}

Status LibNvml::DestroyComputeInstance(GpuIndex gpu, GpuInstanceId gi, ComputeInstanceId ci) {
  CARVE_ASSIGN_OR_RETURN(nvmlGpuInstance_t handle, GpuInstance(gpu, gi));
  const std::string where = fmt::format("(gpu {}, gpu instance {}, compute instance {})",
                                        gpu.value(), gi.value(), ci.value());
  nvmlComputeInstance_t ci_handle = nullptr;
  nvmlReturn_t rc = api_->nvmlGpuInstanceGetComputeInstanceById(handle, ci.value(), &ci_handle);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, "nvmlGpuInstanceGetComputeInstanceById" + where);
  }
  rc = api_->nvmlComputeInstanceDestroy(ci_handle);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, "nvmlComputeInstanceDestroy" + where);
  }
  return OkStatus();
}

Status LibNvml::DestroyGpuInstance(GpuIndex gpu, GpuInstanceId gi) {
  CARVE_ASSIGN_OR_RETURN(nvmlGpuInstance_t handle, GpuInstance(gpu, gi));
  nvmlReturn_t rc = api_->nvmlGpuInstanceDestroy(handle);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlGpuInstanceDestroy(gpu {}, gpu instance {})", gpu.value(),
                                     gi.value()));
  }
  return OkStatus();
}

Result<std::vector<ComputeInstanceInfo>> LibNvml::ListComputeInstances(nvmlGpuInstance_t gi,
                                                                       GpuIndex gpu,
                                                                       uint32_t gi_id) {
  std::vector<ComputeInstanceInfo> out;
  const std::string where = fmt::format("(gpu {}, gpu instance {})", gpu.value(), gi_id);
  for (unsigned int p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlComputeInstanceProfileInfo_t profile = {};
    nvmlReturn_t rc = api_->nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &profile);
    if (IsAbsentProfile(rc)) {
      continue;
    }
    if (rc != NVML_SUCCESS) {
      return NvmlError(rc, "nvmlGpuInstanceGetComputeInstanceProfileInfo" + where);
    }
    // The buffer must hold the profile's instance cap (NVML contract).
    std::vector<nvmlComputeInstance_t> handles(std::max(1u, profile.instanceCount));
    unsigned int count = 0;
    rc = api_->nvmlGpuInstanceGetComputeInstances(gi, profile.id, handles.data(), &count);
    if (rc != NVML_SUCCESS) {
      return NvmlError(rc, "nvmlGpuInstanceGetComputeInstances" + where);
    }
    for (unsigned int k = 0; k < std::min<size_t>(count, handles.size()); ++k) {
      nvmlComputeInstanceInfo_t info = {};
      rc = api_->nvmlComputeInstanceGetInfo_v2(handles[k], &info);
      if (rc != NVML_SUCCESS) {
        return NvmlError(rc, "nvmlComputeInstanceGetInfo_v2" + where);
      }
      out.push_back(
          ComputeInstanceInfo{ComputeInstanceId{info.id}, info.profileId, profile.sliceCount});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

Result<std::vector<GpuInstanceInfo>> LibNvml::ListGpuInstances(GpuIndex gpu) {
  CARVE_ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  std::vector<GpuInstanceInfo> out;
  std::set<unsigned int> seen_profiles;
  for (uint32_t e = 0; e < NVML_GPU_INSTANCE_PROFILE_COUNT; ++e) {
    CARVE_ASSIGN_OR_RETURN(auto profile, GetGpuInstanceProfile(gpu, e));
    if (!profile || !seen_profiles.insert(profile->id.value()).second) {
      continue;
    }
    std::vector<nvmlGpuInstance_t> handles(std::max(1u, profile->instance_count));
    unsigned int count = 0;
    nvmlReturn_t rc =
        api_->nvmlDeviceGetGpuInstances(dev, profile->id.value(), handles.data(), &count);
    if (rc != NVML_SUCCESS) {
      return NvmlError(rc, fmt::format("nvmlDeviceGetGpuInstances(gpu {}, profile id {})",
                                       gpu.value(), profile->id.value()));
    }
    for (unsigned int k = 0; k < std::min<size_t>(count, handles.size()); ++k) {
      nvmlGpuInstanceInfo_t info = {};
      rc = api_->nvmlGpuInstanceGetInfo(handles[k], &info);
      if (rc != NVML_SUCCESS) {
        return NvmlError(rc, fmt::format("nvmlGpuInstanceGetInfo(gpu {})", gpu.value()));
      }
      GpuInstanceInfo gi;
      gi.id = GpuInstanceId{info.id};
      gi.profile_id = NvmlProfileId{info.profileId};
      gi.placement = GiPlacement{info.placement.start, info.placement.size};
      CARVE_ASSIGN_OR_RETURN(gi.compute_instances, ListComputeInstances(handles[k], gpu, info.id));
      out.push_back(std::move(gi));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

Result<std::vector<MigDeviceInfo>> LibNvml::ListMigDevices(GpuIndex gpu) {
  CARVE_ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  const uint32_t i = gpu.value();
  unsigned int max = 0;
  nvmlReturn_t rc = api_->nvmlDeviceGetMaxMigDeviceCount(dev, &max);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlDeviceGetMaxMigDeviceCount(gpu {})", i));
  }
  std::vector<MigDeviceInfo> out;
  for (unsigned int k = 0; k < max; ++k) {
    nvmlDevice_t mig = nullptr;
    rc = api_->nvmlDeviceGetMigDeviceHandleByIndex(dev, k, &mig);
    if (rc == NVML_ERROR_NOT_FOUND) {
      continue;  // An empty slot.
    }
    const std::string where = fmt::format("(gpu {}, mig index {})", i, k);
    if (rc != NVML_SUCCESS) {
      return NvmlError(rc, "nvmlDeviceGetMigDeviceHandleByIndex" + where);
    }
    unsigned int gi = 0;
    unsigned int ci = 0;
    rc = api_->nvmlDeviceGetGpuInstanceId(mig, &gi);
    if (rc != NVML_SUCCESS) {
      return NvmlError(rc, "nvmlDeviceGetGpuInstanceId" + where);
    }
    rc = api_->nvmlDeviceGetComputeInstanceId(mig, &ci);
    if (rc != NVML_SUCCESS) {
      return NvmlError(rc, "nvmlDeviceGetComputeInstanceId" + where);
    }
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    rc = api_->nvmlDeviceGetUUID(mig, uuid, sizeof(uuid));
    if (rc != NVML_SUCCESS) {
      return NvmlError(rc, "nvmlDeviceGetUUID" + where);
    }
    out.push_back(
        MigDeviceInfo{GpuInstanceId{gi}, ComputeInstanceId{ci}, FromBuffer(uuid, sizeof(uuid))});
  }
  return out;
}

Result<GpuUtilization> LibNvml::Utilization(GpuIndex gpu) {
  CARVE_ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  nvmlUtilization_t u = {};
  nvmlReturn_t rc = api_->nvmlDeviceGetUtilizationRates(dev, &u);
  if (rc != NVML_SUCCESS) {
    return NvmlError(rc, fmt::format("nvmlDeviceGetUtilizationRates(gpu {})", gpu.value()));
  }
  return GpuUtilization{u.gpu, u.memory};
}

Result<std::vector<GpuProcess>> LibNvml::ComputeProcesses(GpuIndex gpu) {
  CARVE_ASSIGN_OR_RETURN(nvmlDevice_t dev, Device(gpu));
  const std::string call =
      fmt::format("nvmlDeviceGetComputeRunningProcesses_v3(gpu {})", gpu.value());
  // Processes come and go between the sizing call and the read: retry a few times with room
  // to spare, as NVML's INSUFFICIENT_SIZE contract intends.
  std::vector<nvmlProcessInfo_t> raw(16);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned int count = static_cast<unsigned int>(raw.size());
    nvmlReturn_t rc = api_->nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, raw.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      raw.resize(count + 16);
      continue;
    }
    if (rc != NVML_SUCCESS) {
      return NvmlError(rc, call);
    }
    std::vector<GpuProcess> out;
    for (unsigned int k = 0; k < std::min<size_t>(count, raw.size()); ++k) {
      GpuProcess p;
      p.pid = raw[k].pid;
      p.used_memory_mib = raw[k].usedGpuMemory / kMiB;
      if (raw[k].gpuInstanceId != kNoInstance) {
        p.gpu_instance = GpuInstanceId{raw[k].gpuInstanceId};
        p.compute_instance = ComputeInstanceId{raw[k].computeInstanceId};
      }
      out.push_back(p);
    }
    return out;
  }
  return Unavailable(call + ": the process list kept growing while it was read; retry");
}

}  // namespace carve::agent
