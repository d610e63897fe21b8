// FakeNvmlCore: an in-memory NVML node that behaves as MIG does, speaking NVML's return codes.
//
// One core backs both fakes: FakeNvml (the in-process Nvml) and the fake libnvidia-ml.so.1 (a
// C-ABI shell over a core configured from CARVE_FAKE_NVML_CONFIG), so the rules below are written
// once. The geometry comes from the catalog rows of the configured GPUs:
//   - possible placements are the profile's starts, each [start, start + placement_size);
//   - creation is refused (INSUFFICIENT_RESOURCES) when the range overlaps an existing GPU
//     instance, the profile's max_count is reached, a second +me instance is asked for, a
//     +me.all instance is present and the new one is not -me, or compute slices run out;
//   - a placement that is not one of the profile's is INVALID_ARGUMENT;
//   - creation needs MIG mode enabled (NOT_SUPPORTED otherwise, as NVML does);
//   - SetMigMode only marks the mode pending; SimulateReset applies it (and drops all instances);
//   - a driver older than the GPU's MIG minimum hides MIG (GetMigMode NOT_SUPPORTED), and a
//     profile whose own minimum is newer than the driver is absent from the profile table;
//   - a GPU instance with compute instances or processes cannot be destroyed (IN_USE).
// Failure injection: the Nth GPU-instance or compute-instance creation fails with a chosen code;
// a lost GPU answers GPU_IS_LOST to every per-device call.
// Not thread-safe: the shared-library shell serialises calls with a mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/nvml/fake_node_config.h"
#include "agent/nvml/nvml_abi.h"
#include "catalog/gpu_model.h"

namespace carve::agent {

struct FakeComputeInstance {
  uint32_t id = 0;
  uint32_t profile_id = 0;  // NVML_COMPUTE_INSTANCE_PROFILE_* (the fake uses enum == id).
  uint32_t slices = 0;
  std::string uuid;  // The MIG device UUID: "MIG-...".
};

struct FakeGpuInstance {
  uint32_t id = 0;
  const catalog::MigProfile* profile = nullptr;
  uint32_t start = 0;
  std::vector<FakeComputeInstance> compute_instances;  // By id.
};

struct FakeDeviceView {
  std::string uuid;
  std::string name;
  uint32_t pci_device_id = 0;
  std::string bus_id;
  uint64_t memory_total_bytes = 0;
  uint64_t memory_used_bytes = 0;
};

class FakeNvmlCore {
 public:
  explicit FakeNvmlCore(const FakeNodeConfig& config);

  // ---- Test controls ----
  // The n-th GPU-instance creation from now (1-based) fails with `rc`; 0 turns it off.
  void FailNthCreate(int n, nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_RESOURCES);
  void FailNthComputeCreate(int n, nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_RESOURCES);
  void SetGpuLost(uint32_t gpu, bool lost);
  void SetDriverVersion(std::string version);
  // Marks the requested mode pending, as nvmlDeviceSetMigMode does; needs SimulateReset.
  void SetMigMode(uint32_t gpu, bool enabled);
  void SimulateReset(uint32_t gpu);
  // A compute process; gi/ci set when it runs on a MIG device.
  void AddProcess(uint32_t gpu, uint32_t pid, uint64_t used_mib,
                  std::optional<uint32_t> gi = std::nullopt, std::optional<uint32_t> ci = {});
  void ClearProcesses(uint32_t gpu);
  void SetUtilization(uint32_t gpu, uint32_t gpu_percent, uint32_t memory_percent);
  int gpu_instance_create_calls() const { return gi_create_calls_; }
  // Every successful create/destroy, in order: "gpu0 create-gi 1 (3g.20gb@4)",
  // "gpu0 create-ci 1/0", "gpu0 destroy-ci 1/0", "gpu0 destroy-gi 1".
  const std::vector<std::string>& journal() const { return journal_; }
  uint32_t gpu_count() const { return static_cast<uint32_t>(gpus_.size()); }

  // ---- NVML semantics (return codes as NVML's) ----
  nvmlReturn_t Init();
  nvmlReturn_t Shutdown();
  nvmlReturn_t DriverVersion(std::string* out) const;
  nvmlReturn_t DeviceCount(unsigned int* out) const;
  nvmlReturn_t Device(uint32_t gpu, FakeDeviceView* out) const;
  nvmlReturn_t MigMode(uint32_t gpu, unsigned int* current, unsigned int* pending) const;
  // The catalog row answering NVML_GPU_INSTANCE_PROFILE_<profile_enum> on this GPU and driver.
  nvmlReturn_t GpuInstanceProfile(uint32_t gpu, unsigned int profile_enum,
                                  const catalog::MigProfile** out) const;
  nvmlReturn_t Placements(uint32_t gpu, unsigned int profile_id,
                          std::vector<nvmlGpuInstancePlacement_t>* out) const;
  nvmlReturn_t CreateGpuInstance(uint32_t gpu, unsigned int profile_id,
                                 nvmlGpuInstancePlacement_t placement, unsigned int* gi_id);
  nvmlReturn_t DestroyGpuInstance(uint32_t gpu, unsigned int gi_id);
  // All GPU instances (by id); with profile_id set, only those of that profile.
  nvmlReturn_t GpuInstances(uint32_t gpu, std::optional<unsigned int> profile_id,
                            std::vector<const FakeGpuInstance*>* out) const;
  nvmlReturn_t GpuInstance(uint32_t gpu, unsigned int gi_id, const FakeGpuInstance** out) const;
  nvmlReturn_t ComputeInstanceProfile(uint32_t gpu, unsigned int gi_id, unsigned int ci_enum,
                                      nvmlComputeInstanceProfileInfo_t* out) const;
  nvmlReturn_t CreateComputeInstance(uint32_t gpu, unsigned int gi_id, unsigned int ci_profile_id,
                                     unsigned int* ci_id);
  nvmlReturn_t DestroyComputeInstance(uint32_t gpu, unsigned int gi_id, unsigned int ci_id);
  nvmlReturn_t MaxMigDeviceCount(uint32_t gpu, unsigned int* out) const;
  // The index-th MIG device (compute instances in (GI id, CI id) order); NOT_FOUND past the end.
  nvmlReturn_t MigDevice(uint32_t gpu, unsigned int index, unsigned int* gi_id, unsigned int* ci_id,
                         std::string* uuid) const;
  nvmlReturn_t Utilization(uint32_t gpu, nvmlUtilization_t* out) const;
  nvmlReturn_t Processes(uint32_t gpu, std::vector<nvmlProcessInfo_t>* out) const;

 private:
  struct Process {
    uint32_t pid = 0;
    uint64_t used_mib = 0;
    std::optional<uint32_t> gi, ci;
  };
  struct Gpu {
    const catalog::GpuModel* model = nullptr;
    std::string uuid;
    bool mig_current = false;
    bool mig_pending = false;
    bool lost = false;
    std::vector<FakeGpuInstance> instances;  // By id.
    std::vector<Process> processes;
    nvmlUtilization_t utilization{0, 0};
  };

  // UNINITIALIZED, INVALID_ARGUMENT (no such GPU) or GPU_IS_LOST; SUCCESS otherwise.
  nvmlReturn_t Check(uint32_t gpu) const;
  bool DriverSupports(const catalog::DriverVersion& minimum) const;
  const catalog::MigProfile* ProfileById(const Gpu& g, unsigned int profile_id) const;
  static nvmlReturn_t CheckRoom(const Gpu& g, const catalog::MigProfile& p, unsigned int start);
  std::string NextMigUuid();

  std::vector<Gpu> gpus_;
  std::string driver_version_;
  uint32_t seed_ = 0;
  bool privileged_ = true;  // false: placements are refused while MIG is off
  bool initialized_ = false;
  int gi_create_calls_ = 0;
  int ci_create_calls_ = 0;
  int fail_gi_at_ = 0;  // Absolute call number that fails; 0: none.
  nvmlReturn_t fail_gi_rc_ = NVML_ERROR_INSUFFICIENT_RESOURCES;
  int fail_ci_at_ = 0;
  nvmlReturn_t fail_ci_rc_ = NVML_ERROR_INSUFFICIENT_RESOURCES;
  uint64_t mig_uuid_counter_ = 0;
  std::vector<std::string> journal_;
};

}  // namespace carve::agent
