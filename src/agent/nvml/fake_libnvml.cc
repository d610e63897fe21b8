// The fake libnvidia-ml.so.1: NVML's C ABI over one process-wide FakeNvmlCore, configured from
// CARVE_FAKE_NVML_CONFIG (see fake_node_config.h) at the first nvmlInit_v2. Tests dlopen it
// through LibNvml, so CI runs the real dynamic-loading path without a GPU.
//
// Handles are pointers to interned records that live as long as the library, so a stale handle
// (a destroyed instance) is answered with NVML_ERROR_INVALID_ARGUMENT by the core rather than
// crashing. MIG device handles answer nvmlDeviceGetUUID / GetGpuInstanceId /
// GetComputeInstanceId; other device calls on them are INVALID_ARGUMENT. Only nvml* symbols are
// exported (fake_libnvml.map). All entry points take one mutex.
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>

#include "agent/nvml/fake_node_config.h"
#include "agent/nvml/fake_nvml_core.h"
#include "agent/nvml/nvml_abi.h"

namespace carve::agent {
namespace {

struct DeviceRec {
  uint32_t gpu = 0;
  bool mig = false;
  uint32_t gi = 0, ci = 0;
};
struct GiRec {
  uint32_t gpu = 0, gi = 0;
};
struct CiRec {
  uint32_t gpu = 0, gi = 0, ci = 0;
};

class FakeLibrary {
 public:
  std::mutex mu;
  std::unique_ptr<FakeNvmlCore> core;  // Guarded by mu; created at the first successful init.

  nvmlDevice_t Device(uint32_t gpu, bool mig = false, uint32_t gi = 0, uint32_t ci = 0) {
    auto key = std::make_tuple(gpu, mig, gi, ci);
    auto it = devices_.find(key);
    if (it != devices_.end()) {
      return it->second;
    }
    device_recs_.push_back(DeviceRec{gpu, mig, gi, ci});
    auto* h = reinterpret_cast<nvmlDevice_t>(&device_recs_.back());
    known_.insert(h);
    devices_.emplace(key, h);
    return h;
  }
  nvmlGpuInstance_t Gi(uint32_t gpu, uint32_t gi) {
    auto key = std::make_pair(gpu, gi);
    auto it = gis_.find(key);
    if (it != gis_.end()) {
      return it->second;
    }
    gi_recs_.push_back(GiRec{gpu, gi});
    auto* h = reinterpret_cast<nvmlGpuInstance_t>(&gi_recs_.back());
    known_.insert(h);
    gis_.emplace(key, h);
    return h;
  }
  nvmlComputeInstance_t Ci(uint32_t gpu, uint32_t gi, uint32_t ci) {
    auto key = std::make_tuple(gpu, gi, ci);
    auto it = cis_.find(key);
    if (it != cis_.end()) {
      return it->second;
    }
    ci_recs_.push_back(CiRec{gpu, gi, ci});
    auto* h = reinterpret_cast<nvmlComputeInstance_t>(&ci_recs_.back());
    known_.insert(h);
    cis_.emplace(key, h);
    return h;
  }
  template <typename Rec, typename Handle>
  const Rec* Lookup(Handle h) const {
    if (!known_.contains(static_cast<const void*>(h))) {
      return nullptr;
    }
    return reinterpret_cast<const Rec*>(h);
  }

 private:
  std::deque<DeviceRec> device_recs_;  // Deques keep addresses stable as they grow.
  std::deque<GiRec> gi_recs_;
  std::deque<CiRec> ci_recs_;
  std::map<std::tuple<uint32_t, bool, uint32_t, uint32_t>, nvmlDevice_t> devices_;
  std::map<std::pair<uint32_t, uint32_t>, nvmlGpuInstance_t> gis_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, nvmlComputeInstance_t> cis_;
  std::set<const void*> known_;
};

// One instance per load of the library, destroyed when it is unloaded: LibNvml dlcloses it,
// after nvmlShutdown, and a heap instance held by a static pointer then leaked with the mapping
// that held the pointer (LeakSanitizer, lib_nvml_test and mig_dlopen_test). Callers shut NVML
// down before they unload it or exit, so nothing uses the instance after its destructor.
FakeLibrary& Lib() {
  static FakeLibrary lib;
  return lib;
}

nvmlReturn_t CopyString(const std::string& s, char* out, unsigned int length) {
  if (out == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (s.size() + 1 > length) {
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

// A physical device record, or nullptr for unknown and MIG handles.
const DeviceRec* Physical(nvmlDevice_t d) {
  const DeviceRec* rec = Lib().Lookup<DeviceRec>(d);
  return rec != nullptr && !rec->mig ? rec : nullptr;
}

}  // namespace
}  // namespace carve::agent

using carve::agent::CiRec;
using carve::agent::CopyString;
using carve::agent::DeviceRec;
using carve::agent::GiRec;
using carve::agent::Lib;
using carve::agent::Physical;

// Entry-point prologues; they declare names, so the arguments cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses,readability-braces-around-statements)
#define FAKE_LOCK()                                 \
  std::lock_guard<std::mutex> lock(Lib().mu);       \
  if (!Lib().core) return NVML_ERROR_UNINITIALIZED; \
  carve::agent::FakeNvmlCore& core = *Lib().core

#define FAKE_DEVICE(var, handle)           \
  const DeviceRec* var = Physical(handle); \
  if (var == nullptr) return NVML_ERROR_INVALID_ARGUMENT

#define FAKE_GI(var, handle)                      \
  const GiRec* var = Lib().Lookup<GiRec>(handle); \
  if (var == nullptr) return NVML_ERROR_INVALID_ARGUMENT
// NOLINTEND(bugprone-macro-parentheses,readability-braces-around-statements)

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
  std::lock_guard<std::mutex> lock(Lib().mu);
  if (!Lib().core) {
    auto config = carve::agent::FakeNodeConfigFromEnvironment();
    if (!config) {
      std::fprintf(stderr, "fake libnvidia-ml: %s\n", config.error().message.c_str());
      return NVML_ERROR_UNKNOWN;
    }
    Lib().core = std::make_unique<carve::agent::FakeNvmlCore>(*config);
  }
  return Lib().core->Init();
}

nvmlReturn_t nvmlShutdown(void) {
  FAKE_LOCK();
  return core.Shutdown();
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  FAKE_LOCK();
  std::string v;
  if (nvmlReturn_t rc = core.DriverVersion(&v); rc != NVML_SUCCESS) {
    return rc;
  }
  return CopyString(v, version, length);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  FAKE_LOCK();
  return core.DeviceCount(count);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  FAKE_LOCK();
  unsigned int n = 0;
  if (nvmlReturn_t rc = core.DeviceCount(&n); rc != NVML_SUCCESS) {
    return rc;
  }
  if (index >= n || device == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *device = Lib().Device(index);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  FAKE_LOCK();
  const DeviceRec* rec = Lib().Lookup<DeviceRec>(device);
  if (rec == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (rec->mig) {
    const carve::agent::FakeGpuInstance* gi = nullptr;
    if (nvmlReturn_t rc = core.GpuInstance(rec->gpu, rec->gi, &gi); rc != NVML_SUCCESS) {
      return NVML_ERROR_INVALID_ARGUMENT;  // The MIG device was destroyed.
    }
    for (const auto& ci : gi->compute_instances) {
      if (ci.id == rec->ci) {
        return CopyString(ci.uuid, uuid, length);
      }
    }
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  carve::agent::FakeDeviceView v;
  if (nvmlReturn_t rc = core.Device(rec->gpu, &v); rc != NVML_SUCCESS) {
    return rc;
  }
  return CopyString(v.uuid, uuid, length);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  carve::agent::FakeDeviceView v;
  if (nvmlReturn_t rc = core.Device(rec->gpu, &v); rc != NVML_SUCCESS) {
    return rc;
  }
  return CopyString(v.name, name, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  carve::agent::FakeDeviceView v;
  if (nvmlReturn_t rc = core.Device(rec->gpu, &v); rc != NVML_SUCCESS) {
    return rc;
  }
  *pci = nvmlPciInfo_t{};
  pci->bus = 0x10 + rec->gpu;
  pci->pciDeviceId = v.pci_device_id;
  pci->pciSubSystemId = 0x145F10DE;
  std::snprintf(pci->busId, sizeof(pci->busId), "%s", v.bus_id.c_str());
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", pci->bus);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  if (memory == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (memory->version != nvmlMemory_v2) {
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  }
  carve::agent::FakeDeviceView v;
  if (nvmlReturn_t rc = core.Device(rec->gpu, &v); rc != NVML_SUCCESS) {
    return rc;
  }
  memory->total = v.memory_total_bytes;
  memory->reserved = 0;
  memory->used = v.memory_used_bytes;
  memory->free = v.memory_total_bytes - v.memory_used_bytes;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                  unsigned int* pending) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  return core.MigMode(rec->gpu, current, pending);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t* info) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  if (info == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (info->version != nvmlGpuInstanceProfileInfo_v2) {
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  }
  const carve::catalog::MigProfile* p = nullptr;
  if (nvmlReturn_t rc = core.GpuInstanceProfile(rec->gpu, profile, &p); rc != NVML_SUCCESS) {
    return rc;
  }
  const unsigned int version = info->version;
  *info = nvmlGpuInstanceProfileInfo_v2_t{};
  info->version = version;
  info->id = p->id.value();
  info->sliceCount = static_cast<unsigned int>(p->compute_slices);
  info->instanceCount = static_cast<unsigned int>(p->max_count);
  info->multiprocessorCount = static_cast<unsigned int>(p->sms);
  info->memorySizeMB = static_cast<unsigned long long>(p->memory_mib);
  std::snprintf(info->name, sizeof(info->name), "%.*s", static_cast<int>(p->name.size()),
                p->name.data());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                           unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t* placements,
                                                           unsigned int* count) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  if (count == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  std::vector<nvmlGpuInstancePlacement_t> all;
  if (nvmlReturn_t rc = core.Placements(rec->gpu, profileId, &all); rc != NVML_SUCCESS) {
    return rc;
  }
  if (placements != nullptr) {
    if (*count != 0 && *count < all.size()) {
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    std::copy(all.begin(), all.end(), placements);
  }
  *count = static_cast<unsigned int>(all.size());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t* placement,
                                                      nvmlGpuInstance_t* gpuInstance) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  if (placement == nullptr || gpuInstance == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned int id = 0;
  if (nvmlReturn_t rc = core.CreateGpuInstance(rec->gpu, profileId, *placement, &id);
      rc != NVML_SUCCESS) {
    return rc;
  }
  *gpuInstance = Lib().Gi(rec->gpu, id);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t* gpuInstances, unsigned int* count) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  if (gpuInstances == nullptr || count == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  std::vector<nvmlGpuInstancePlacement_t> probe;
  if (nvmlReturn_t rc = core.Placements(rec->gpu, profileId, &probe); rc != NVML_SUCCESS) {
    return rc;  // Unknown profile id.
  }
  std::vector<const carve::agent::FakeGpuInstance*> gis;
  if (nvmlReturn_t rc = core.GpuInstances(rec->gpu, profileId, &gis); rc != NVML_SUCCESS) {
    return rc;
  }
  for (size_t k = 0; k < gis.size(); ++k) {
    gpuInstances[k] = Lib().Gi(rec->gpu, gis[k]->id);
  }
  *count = static_cast<unsigned int>(gis.size());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t* gpuInstance) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  const carve::agent::FakeGpuInstance* gi = nullptr;
  if (nvmlReturn_t rc = core.GpuInstance(rec->gpu, id, &gi); rc != NVML_SUCCESS) {
    return rc;
  }
  *gpuInstance = Lib().Gi(rec->gpu, id);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info) {
  FAKE_LOCK();
  FAKE_GI(rec, gpuInstance);
  const carve::agent::FakeGpuInstance* gi = nullptr;
  if (info == nullptr || core.GpuInstance(rec->gpu, rec->gi, &gi) != NVML_SUCCESS) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  info->device = Lib().Device(rec->gpu);
  info->id = gi->id;
  info->profileId = gi->profile->id.value();
  info->placement = {gi->start, static_cast<unsigned int>(gi->profile->placement_size)};
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  FAKE_LOCK();
  FAKE_GI(rec, gpuInstance);
  return core.DestroyGpuInstance(rec->gpu, rec->gi);
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t* info) {
  FAKE_LOCK();
  FAKE_GI(rec, gpuInstance);
  if (engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  return core.ComputeInstanceProfile(rec->gpu, rec->gi, profile, info);
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t* computeInstance) {
  FAKE_LOCK();
  FAKE_GI(rec, gpuInstance);
  unsigned int id = 0;
  if (nvmlReturn_t rc = core.CreateComputeInstance(rec->gpu, rec->gi, profileId, &id);
      rc != NVML_SUCCESS) {
    return rc;
  }
  *computeInstance = Lib().Ci(rec->gpu, rec->gi, id);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                unsigned int profileId,
                                                nvmlComputeInstance_t* computeInstances,
                                                unsigned int* count) {
  FAKE_LOCK();
  FAKE_GI(rec, gpuInstance);
  if (computeInstances == nullptr || count == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const carve::agent::FakeGpuInstance* gi = nullptr;
  if (core.GpuInstance(rec->gpu, rec->gi, &gi) != NVML_SUCCESS) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned int n = 0;
  for (const auto& ci : gi->compute_instances) {
    if (ci.profile_id == profileId) {
      computeInstances[n++] = Lib().Ci(rec->gpu, rec->gi, ci.id);
    }
  }
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                   nvmlComputeInstance_t* computeInstance) {
  FAKE_LOCK();
  FAKE_GI(rec, gpuInstance);
  const carve::agent::FakeGpuInstance* gi = nullptr;
  if (core.GpuInstance(rec->gpu, rec->gi, &gi) != NVML_SUCCESS) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  for (const auto& ci : gi->compute_instances) {
    if (ci.id == id) {
      *computeInstance = Lib().Ci(rec->gpu, rec->gi, id);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                           nvmlComputeInstanceInfo_t* info) {
  FAKE_LOCK();
  const CiRec* rec = Lib().Lookup<CiRec>(computeInstance);
  if (rec == nullptr || info == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const carve::agent::FakeGpuInstance* gi = nullptr;
  if (core.GpuInstance(rec->gpu, rec->gi, &gi) != NVML_SUCCESS) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  for (const auto& ci : gi->compute_instances) {
    if (ci.id != rec->ci) {
      continue;
    }
    info->device = Lib().Device(rec->gpu);
    info->gpuInstance = Lib().Gi(rec->gpu, rec->gi);
    info->id = ci.id;
    info->profileId = ci.profile_id;
    info->placement = {0, ci.slices};
    return NVML_SUCCESS;
  }
  return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  FAKE_LOCK();
  const CiRec* rec = Lib().Lookup<CiRec>(computeInstance);
  if (rec == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return core.DestroyComputeInstance(rec->gpu, rec->gi, rec->ci);
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  return core.MaxMigDeviceCount(rec->gpu, count);
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* migDevice) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  unsigned int gi = 0;
  unsigned int ci = 0;
  std::string uuid;
  if (nvmlReturn_t rc = core.MigDevice(rec->gpu, index, &gi, &ci, &uuid); rc != NVML_SUCCESS) {
    return rc;
  }
  *migDevice = Lib().Device(rec->gpu, true, gi, ci);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  FAKE_LOCK();
  (void)core;
  const DeviceRec* rec = Lib().Lookup<DeviceRec>(device);
  if (rec == nullptr || !rec->mig) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *id = rec->gi;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  FAKE_LOCK();
  (void)core;
  const DeviceRec* rec = Lib().Lookup<DeviceRec>(device);
  if (rec == nullptr || !rec->mig) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *id = rec->ci;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  return core.Utilization(rec->gpu, utilization);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  FAKE_LOCK();
  FAKE_DEVICE(rec, device);
  if (infoCount == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  std::vector<nvmlProcessInfo_t> all;
  if (nvmlReturn_t rc = core.Processes(rec->gpu, &all); rc != NVML_SUCCESS) {
    return rc;
  }
  if (*infoCount < all.size() || (infos == nullptr && !all.empty())) {
    *infoCount = static_cast<unsigned int>(all.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(all.begin(), all.end(), infos);
  *infoCount = static_cast<unsigned int>(all.size());
  return NVML_SUCCESS;
}

}  // extern "C"
