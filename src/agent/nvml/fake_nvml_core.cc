#include "agent/nvml/fake_nvml_core.h"

#include <fmt/format.h>

#include <algorithm>

#include "catalog/driver_version.h"

namespace carve::agent {
namespace {

constexpr uint64_t kMiB = 1024ull * 1024ull;
constexpr unsigned int kNoInstance = 0xFFFFFFFFu;

// Compute slices of each NVML_COMPUTE_INSTANCE_PROFILE_* enum (index); 0: not offered by the fake
// (1_SLICE_REV1 is a media-engine CI variant carve never creates).
constexpr uint32_t kCiSlices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = {1, 2, 3, 4, 7, 8, 6, 0};

bool IsMe(catalog::ProfileSuffix s) {
  return s == catalog::ProfileSuffix::kMe || s == catalog::ProfileSuffix::kMeAll;
}

}  // namespace

FakeNvmlCore::FakeNvmlCore(const FakeNodeConfig& config)
    : driver_version_(config.driver_version), seed_(config.seed), privileged_(config.privileged) {
  for (size_t i = 0; i < config.gpus.size(); ++i) {
    Gpu g;
    g.model = config.gpus[i];
    g.uuid =
        fmt::format("GPU-{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}", 0xca7e0000u + seed_,
                    static_cast<uint32_t>(i), seed_ & 0xfffu, i & 0xfffu, 0x5eed00000000ull + i);
    const bool capable = g.model->mig_capable();
    switch (config.mig) {
      case FakeMigState::kEnabled:
        g.mig_current = g.mig_pending = capable;
        break;
      case FakeMigState::kDisabled:
        break;
      case FakeMigState::kPendingEnable:
        g.mig_pending = capable;
        break;
      case FakeMigState::kPendingDisable:
        g.mig_current = capable;
        break;
    }
    gpus_.push_back(std::move(g));
  }
  for (uint32_t lost : config.lost_gpus) {
    if (lost < gpus_.size()) {
      gpus_[lost].lost = true;
    }
  }
  for (const auto& p : config.processes) {
    AddProcess(p.gpu, p.pid, p.used_mib);
  }
  if (config.fail_nth_create > 0) {
    FailNthCreate(config.fail_nth_create);
  }
}

void FakeNvmlCore::FailNthCreate(int n, nvmlReturn_t rc) {
  fail_gi_at_ = n > 0 ? gi_create_calls_ + n : 0;
  fail_gi_rc_ = rc;
}

void FakeNvmlCore::FailNthComputeCreate(int n, nvmlReturn_t rc) {
  fail_ci_at_ = n > 0 ? ci_create_calls_ + n : 0;
  fail_ci_rc_ = rc;
}

void FakeNvmlCore::SetGpuLost(uint32_t gpu, bool lost) {
  if (gpu < gpus_.size()) {
    gpus_[gpu].lost = lost;
  }
}

void FakeNvmlCore::SetDriverVersion(std::string version) { driver_version_ = std::move(version); }

void FakeNvmlCore::SetMigMode(uint32_t gpu, bool enabled) {
  if (gpu < gpus_.size()) {
    gpus_[gpu].mig_pending = enabled && gpus_[gpu].model->mig_capable();
  }
}

void FakeNvmlCore::SimulateReset(uint32_t gpu) {
  if (gpu >= gpus_.size()) {
    return;
  }
  Gpu& g = gpus_[gpu];
  // A reset ends every process and, when MIG mode changes, every instance.
  g.processes.clear();
  if (g.mig_current != g.mig_pending) {
    g.instances.clear();
  }
  g.mig_current = g.mig_pending;
}

void FakeNvmlCore::AddProcess(uint32_t gpu, uint32_t pid, uint64_t used_mib,
                              std::optional<uint32_t> gi, std::optional<uint32_t> ci) {
  if (gpu < gpus_.size()) {
    gpus_[gpu].processes.push_back(Process{pid, used_mib, gi, ci});
  }
}

void FakeNvmlCore::ClearProcesses(uint32_t gpu) {
  if (gpu < gpus_.size()) {
    gpus_[gpu].processes.clear();
  }
}

void FakeNvmlCore::SetUtilization(uint32_t gpu, uint32_t gpu_percent, uint32_t memory_percent) {
  if (gpu < gpus_.size()) {
    gpus_[gpu].utilization = nvmlUtilization_t{gpu_percent, memory_percent};
  }
}

nvmlReturn_t FakeNvmlCore::Init() {
  initialized_ = true;
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::Shutdown() {
  if (!initialized_) {
    return NVML_ERROR_UNINITIALIZED;
  }
  initialized_ = false;
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::Check(uint32_t gpu) const {
  if (!initialized_) {
    return NVML_ERROR_UNINITIALIZED;
  }
  if (gpu >= gpus_.size()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (gpus_[gpu].lost) {
    return NVML_ERROR_GPU_IS_LOST;
  }
  return NVML_SUCCESS;
}

bool FakeNvmlCore::DriverSupports(const catalog::DriverVersion& minimum) const {
  if (minimum.IsUnset()) {
    return true;
  }
  auto have = catalog::DriverVersion::Parse(driver_version_);
  return have.has_value() && *have >= minimum;
}

nvmlReturn_t FakeNvmlCore::DriverVersion(std::string* out) const {
  if (!initialized_) {
    return NVML_ERROR_UNINITIALIZED;
  }
  *out = driver_version_;
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::DeviceCount(unsigned int* out) const {
  if (!initialized_) {
    return NVML_ERROR_UNINITIALIZED;
  }
  *out = static_cast<unsigned int>(gpus_.size());
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::Device(uint32_t gpu, FakeDeviceView* out) const {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  const Gpu& g = gpus_[gpu];
  out->uuid = g.uuid;
  out->name = fmt::format("NVIDIA {}", g.model->display_name);
  out->pci_device_id = g.model->pci_device_ids.empty() ? 0 : g.model->pci_device_ids.front();
  out->bus_id = fmt::format("00000000:{:02X}:00.0", 0x10 + gpu);
  out->memory_total_bytes = static_cast<uint64_t>(g.model->memory_mib) * kMiB;
  uint64_t used = 0;
  for (const auto& p : g.processes) {
    used += p.used_mib * kMiB;
  }
  out->memory_used_bytes = std::min(used, out->memory_total_bytes);
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::MigMode(uint32_t gpu, unsigned int* current,
                                   unsigned int* pending) const {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  const Gpu& g = gpus_[gpu];
  if (!g.model->mig_capable() || !DriverSupports(g.model->min_driver)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  *current = g.mig_current ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
  *pending = g.mig_pending ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::GpuInstanceProfile(uint32_t gpu, unsigned int profile_enum,
                                              const catalog::MigProfile** out) const {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  if (profile_enum >= NVML_GPU_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const Gpu& g = gpus_[gpu];
  // The profile table is served only while MIG is on (assumed from the NVML reference; the
  // read-only GPU probe in tests/gpu records what real hardware does).
  if (!g.model->mig_capable() || !DriverSupports(g.model->min_driver) || !g.mig_current) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  for (const catalog::MigProfile& p : g.model->profiles) {
    if (p.nvml_enum == profile_enum && DriverSupports(p.min_driver)) {
      *out = &p;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_SUPPORTED;
}

const catalog::MigProfile* FakeNvmlCore::ProfileById(const Gpu& g, unsigned int profile_id) const {
  if (!DriverSupports(g.model->min_driver)) {
    return nullptr;
  }
  for (const catalog::MigProfile& p : g.model->profiles) {
    if (p.id.value() == profile_id && DriverSupports(p.min_driver)) {
      return &p;
    }
  }
  return nullptr;
}

nvmlReturn_t FakeNvmlCore::Placements(uint32_t gpu, unsigned int profile_id,
                                      std::vector<nvmlGpuInstancePlacement_t>* out) const {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  if (!privileged_ && !gpus_[gpu].mig_current) {
    // An unprivileged caller with MIG off gets no placements: the case in which issue 21's
    // review saw the probe compare nothing and report a match.
    return NVML_ERROR_NO_PERMISSION;
  }
  const catalog::MigProfile* p = ProfileById(gpus_[gpu], profile_id);
  if (p == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  out->clear();
  for (uint8_t s : p->starts) {
    out->push_back({s, static_cast<unsigned int>(p->placement_size)});
  }
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::CheckRoom(const Gpu& g, const catalog::MigProfile& p,
                                     unsigned int start) {
  const unsigned int end = start + static_cast<unsigned int>(p.placement_size);
  int same_profile = 0;
  int compute_slices = p.compute_slices;
  for (const FakeGpuInstance& gi : g.instances) {
    const unsigned int gi_end = gi.start + static_cast<unsigned int>(gi.profile->placement_size);
    if (start < gi_end && gi.start < end) {
      return NVML_ERROR_INSUFFICIENT_RESOURCES;  // Overlap.
    }
    if (gi.profile->id == p.id) {
      ++same_profile;
    }
    compute_slices += gi.profile->compute_slices;
    // At most one media-extension instance per GPU (MIG user guide, profile tables).
    if (IsMe(p.suffix) && IsMe(gi.profile->suffix)) {
      return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    // +me.all "prevents allocation of all but _NO_ME profiles" (nvml.h, 1_SLICE_ALL_ME).
    const bool all_me_here = gi.profile->suffix == catalog::ProfileSuffix::kMeAll;
    const bool all_me_new = p.suffix == catalog::ProfileSuffix::kMeAll;
    if ((all_me_here && p.suffix != catalog::ProfileSuffix::kNoMe) ||
        (all_me_new && gi.profile->suffix != catalog::ProfileSuffix::kNoMe)) {
      return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
  }
  if (same_profile >= p.max_count) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  if (g.model->max_gpu_instances > 0 &&
      static_cast<int>(g.instances.size()) >= g.model->max_gpu_instances) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  if (compute_slices > g.model->compute_slices) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::CreateGpuInstance(uint32_t gpu, unsigned int profile_id,
                                             nvmlGpuInstancePlacement_t placement,
                                             unsigned int* gi_id) {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  Gpu& g = gpus_[gpu];
  if (!g.mig_current) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  const catalog::MigProfile* p = ProfileById(g, profile_id);
  if (p == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const bool start_ok =
      std::find(p->starts.begin(), p->starts.end(), placement.start) != p->starts.end();
  if (!start_ok || placement.size != static_cast<unsigned int>(p->placement_size)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (++gi_create_calls_ == fail_gi_at_) {
    return fail_gi_rc_;
  }
  if (nvmlReturn_t rc = CheckRoom(g, *p, placement.start); rc != NVML_SUCCESS) {
    return rc;
  }
  uint32_t id = 1;
  while (std::any_of(g.instances.begin(), g.instances.end(),
                     [&](const FakeGpuInstance& gi) { return gi.id == id; })) {
    ++id;
  }
  g.instances.push_back(FakeGpuInstance{id, p, placement.start, {}});
  std::sort(g.instances.begin(), g.instances.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  *gi_id = id;
  journal_.push_back(fmt::format("gpu{} create-gi {} ({}@{})", gpu, id, p->name, placement.start));
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::DestroyGpuInstance(uint32_t gpu, unsigned int gi_id) {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  Gpu& g = gpus_[gpu];
  auto it = std::find_if(g.instances.begin(), g.instances.end(),
                         [&](const FakeGpuInstance& gi) { return gi.id == gi_id; });
  if (it == g.instances.end()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const bool busy = std::any_of(g.processes.begin(), g.processes.end(),
                                [&](const Process& p) { return p.gi == gi_id; });
  if (!it->compute_instances.empty() || busy) {
    return NVML_ERROR_IN_USE;
  }
  g.instances.erase(it);
  journal_.push_back(fmt::format("gpu{} destroy-gi {}", gpu, gi_id));
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::GpuInstances(uint32_t gpu, std::optional<unsigned int> profile_id,
                                        std::vector<const FakeGpuInstance*>* out) const {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  out->clear();
  for (const FakeGpuInstance& gi : gpus_[gpu].instances) {
    if (!profile_id || gi.profile->id.value() == *profile_id) {
      out->push_back(&gi);
    }
  }
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::GpuInstance(uint32_t gpu, unsigned int gi_id,
                                       const FakeGpuInstance** out) const {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  for (const FakeGpuInstance& gi : gpus_[gpu].instances) {
    if (gi.id == gi_id) {
      *out = &gi;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t FakeNvmlCore::ComputeInstanceProfile(uint32_t gpu, unsigned int gi_id,
                                                  unsigned int ci_enum,
                                                  nvmlComputeInstanceProfileInfo_t* out) const {
  const FakeGpuInstance* gi = nullptr;
  if (nvmlReturn_t rc = GpuInstance(gpu, gi_id, &gi); rc != NVML_SUCCESS) {
    return rc == NVML_ERROR_NOT_FOUND ? NVML_ERROR_INVALID_ARGUMENT : rc;
  }
  if (ci_enum >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const uint32_t slices = kCiSlices[ci_enum];
  const auto gi_slices = static_cast<uint32_t>(gi->profile->compute_slices);
  if (slices == 0 || slices > gi_slices) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  *out = nvmlComputeInstanceProfileInfo_t{};
  out->id = ci_enum;
  out->sliceCount = slices;
  out->instanceCount = gi_slices / slices;
  out->multiprocessorCount = static_cast<uint32_t>(gi->profile->sms) * slices / gi_slices;
  return NVML_SUCCESS;
}

std::string FakeNvmlCore::NextMigUuid() {
  const uint64_t n = ++mig_uuid_counter_;
  return fmt::format("MIG-{:08x}-{:04x}-4{:03x}-9{:03x}-{:012x}", 0x3a9d0000u + seed_,
                     static_cast<uint32_t>(n >> 16) & 0xffffu, seed_ & 0xfffu, n & 0xfffu,
                     0xd1ce00000000ull + n);
}

nvmlReturn_t FakeNvmlCore::CreateComputeInstance(uint32_t gpu, unsigned int gi_id,
                                                 unsigned int ci_profile_id, unsigned int* ci_id) {
  nvmlComputeInstanceProfileInfo_t info{};
  if (nvmlReturn_t rc = ComputeInstanceProfile(gpu, gi_id, ci_profile_id, &info);
      rc != NVML_SUCCESS) {
    return rc == NVML_ERROR_NOT_SUPPORTED ? NVML_ERROR_INVALID_ARGUMENT : rc;
  }
  if (++ci_create_calls_ == fail_ci_at_) {
    return fail_ci_rc_;
  }
  auto& gis = gpus_[gpu].instances;
  auto& gi = *std::find_if(gis.begin(), gis.end(), [&](const auto& x) { return x.id == gi_id; });
  uint32_t used = 0;
  for (const auto& ci : gi.compute_instances) {
    used += ci.slices;
  }
  if (used + info.sliceCount > static_cast<uint32_t>(gi.profile->compute_slices)) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  uint32_t id = 0;
  while (std::any_of(gi.compute_instances.begin(), gi.compute_instances.end(),
                     [&](const FakeComputeInstance& ci) { return ci.id == id; })) {
    ++id;
  }
  gi.compute_instances.push_back(
      FakeComputeInstance{id, ci_profile_id, info.sliceCount, NextMigUuid()});
  std::sort(gi.compute_instances.begin(), gi.compute_instances.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  *ci_id = id;
  journal_.push_back(fmt::format("gpu{} create-ci {}/{}", gpu, gi_id, id));
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::DestroyComputeInstance(uint32_t gpu, unsigned int gi_id,
                                                  unsigned int ci_id) {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  Gpu& g = gpus_[gpu];
  auto gi = std::find_if(g.instances.begin(), g.instances.end(),
                         [&](const auto& x) { return x.id == gi_id; });
  if (gi == g.instances.end()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  auto ci = std::find_if(gi->compute_instances.begin(), gi->compute_instances.end(),
                         [&](const auto& x) { return x.id == ci_id; });
  if (ci == gi->compute_instances.end()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const bool busy = std::any_of(g.processes.begin(), g.processes.end(), [&](const Process& p) {
    return p.gi == gi_id && (!p.ci || *p.ci == ci_id);
  });
  if (busy) {
    return NVML_ERROR_IN_USE;
  }
  gi->compute_instances.erase(ci);
  journal_.push_back(fmt::format("gpu{} destroy-ci {}/{}", gpu, gi_id, ci_id));
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::MaxMigDeviceCount(uint32_t gpu, unsigned int* out) const {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  const Gpu& g = gpus_[gpu];
  *out = g.mig_current ? static_cast<unsigned int>(g.model->max_gpu_instances) : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::MigDevice(uint32_t gpu, unsigned int index, unsigned int* gi_id,
                                     unsigned int* ci_id, std::string* uuid) const {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  unsigned int k = 0;
  for (const FakeGpuInstance& gi : gpus_[gpu].instances) {
    for (const FakeComputeInstance& ci : gi.compute_instances) {
      if (k++ == index) {
        *gi_id = gi.id;
        *ci_id = ci.id;
        *uuid = ci.uuid;
        return NVML_SUCCESS;
      }
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t FakeNvmlCore::Utilization(uint32_t gpu, nvmlUtilization_t* out) const {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  *out = gpus_[gpu].utilization;
  return NVML_SUCCESS;
}

nvmlReturn_t FakeNvmlCore::Processes(uint32_t gpu, std::vector<nvmlProcessInfo_t>* out) const {
  if (nvmlReturn_t rc = Check(gpu); rc != NVML_SUCCESS) {
    return rc;
  }
  out->clear();
  for (const Process& p : gpus_[gpu].processes) {
    out->push_back(nvmlProcessInfo_t{p.pid, p.used_mib * kMiB, p.gi.value_or(kNoInstance),
                                     p.ci.value_or(kNoInstance)});
  }
  return NVML_SUCCESS;
}

}  // namespace carve::agent
