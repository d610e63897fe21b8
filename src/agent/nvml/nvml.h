// Nvml: the node agent's seam to NVIDIA's management library, in carve's types.
//
// Two implementations: LibNvml (dlopen'ed libnvidia-ml.so.1) and FakeNvml (in memory, MIG
// geometry from the catalog). Everything above this seam (discovery, the carver) is tested
// against FakeNvml and, through the fake libnvidia-ml.so.1, against LibNvml itself.
//
// Errors: every NVML failure is mapped by NvmlError() (nvml_error.h), so the code says what kind
// of failure it was and the message names the NVML call, its arguments and the NVML return
// name. A lost GPU (NVML_ERROR_GPU_IS_LOST) is kUnavailable with "GPU_IS_LOST" in the message.
// Implementations are not thread-safe; the agent owns one per process and serialises calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/result.h"

namespace carve::agent {

struct NvmlDeviceInfo {
  std::string uuid;            // "GPU-..."
  std::string name;            // "NVIDIA A100-SXM4-40GB"
  uint32_t pci_device_id = 0;  // nvmlPciInfo_t.pciDeviceId, e.g. 0x20B010DE.
  std::string pci_bus_id;      // "00000000:07:00.0"
  uint64_t memory_total_mib = 0;
  uint64_t memory_used_mib = 0;
};

// nvmlDeviceGetMigMode: the mode now and the mode after the next GPU reset.
struct MigMode {
  bool current_enabled = false;
  bool pending_enabled = false;
  bool ResetPending() const { return current_enabled != pending_enabled; }
  friend bool operator==(const MigMode&, const MigMode&) = default;
};

// One row of the live GPU-instance profile table (nvmlGpuInstanceProfileInfo_v2_t).
struct GpuInstanceProfileInfo {
  uint32_t nvml_enum = 0;       // NVML_GPU_INSTANCE_PROFILE_* that was asked for.
  NvmlProfileId id;             // What placements and creation take.
  std::string name;             // "3g.20gb"; empty when the driver does not name profiles.
  uint32_t slice_count = 0;     // Compute slices.
  uint32_t instance_count = 0;  // Per-GPU cap.
  uint32_t multiprocessor_count = 0;
  uint64_t memory_mib = 0;
};

// nvmlGpuInstancePlacement_t: [start, start + size) in placement units.
struct GiPlacement {
  uint32_t start = 0;
  uint32_t size = 0;
  friend bool operator==(const GiPlacement&, const GiPlacement&) = default;
};

struct ComputeInstanceInfo {
  ComputeInstanceId id;
  uint32_t profile_id = 0;
  uint32_t slice_count = 0;
};

struct GpuInstanceInfo {
  GpuInstanceId id;
  NvmlProfileId profile_id;
  GiPlacement placement;
  std::vector<ComputeInstanceInfo> compute_instances;  // By id.
};

// A MIG device: one compute instance as CUDA sees it (CUDA_VISIBLE_DEVICES=MIG-<uuid>).
struct MigDeviceInfo {
  GpuInstanceId gpu_instance;
  ComputeInstanceId compute_instance;
  std::string uuid;  // "MIG-..."
};

struct GpuUtilization {
  uint32_t gpu_percent = 0;
  uint32_t memory_percent = 0;
};

struct GpuProcess {
  uint32_t pid = 0;
  uint64_t used_memory_mib = 0;
  std::optional<GpuInstanceId> gpu_instance;  // Set when the process runs on a MIG device.
  std::optional<ComputeInstanceId> compute_instance;
};

class Nvml {
 public:
  virtual ~Nvml() = default;

  // nvmlInit_v2 / nvmlShutdown. Every other call needs a successful Init first.
  virtual Status Init() = 0;
  virtual Status Shutdown() = 0;

  // nvmlSystemGetDriverVersion, e.g. "550.54.15".
  virtual Result<std::string> DriverVersion() = 0;
  virtual Result<uint32_t> DeviceCount() = 0;
  // UUID, name, PCI and memory of the physical GPU at `gpu`.
  virtual Result<NvmlDeviceInfo> DeviceInfo(GpuIndex gpu) = 0;
  // kUnimplemented when the GPU (or this driver) does not support MIG.
  virtual Result<MigMode> GetMigMode(GpuIndex gpu) = 0;

  // The live profile for one NVML_GPU_INSTANCE_PROFILE_* enum; nullopt when this GPU/driver has
  // no such profile (NVML_ERROR_NOT_SUPPORTED / INVALID_ARGUMENT for that enum).
  virtual Result<std::optional<GpuInstanceProfileInfo>> GetGpuInstanceProfile(
      GpuIndex gpu, uint32_t profile_enum) = 0;
  // All placements the profile may take, whatever is carved now and whatever the MIG mode.
  virtual Result<std::vector<GiPlacement>> PossiblePlacements(GpuIndex gpu,
                                                              NvmlProfileId profile) = 0;

  // nvmlDeviceCreateGpuInstanceWithPlacement; kResourceExhausted when the range is occupied or
  // the profile's cap is reached, kUnimplemented when MIG is not enabled.
  virtual Result<GpuInstanceId> CreateGpuInstance(GpuIndex gpu, NvmlProfileId profile,
                                                  GiPlacement placement) = 0;
  // A compute instance spanning the whole GPU instance (the profile whose slice count equals
  // the GI's); the full-size CI is what SageMaker-style partitions expose.
  virtual Result<ComputeInstanceId> CreateFullComputeInstance(GpuIndex gpu, GpuInstanceId gi) = 0;
  virtual Status DestroyComputeInstance(GpuIndex gpu, GpuInstanceId gi, ComputeInstanceId ci) = 0;
  // kFailedPrecondition (NVML_ERROR_IN_USE) while compute instances remain.
  virtual Status DestroyGpuInstance(GpuIndex gpu, GpuInstanceId gi) = 0;
  // Every GPU instance on the GPU with its compute instances, by GI id.
  virtual Result<std::vector<GpuInstanceInfo>> ListGpuInstances(GpuIndex gpu) = 0;
  // Every MIG device (one per compute instance) with its UUID.
  virtual Result<std::vector<MigDeviceInfo>> ListMigDevices(GpuIndex gpu) = 0;

  virtual Result<GpuUtilization> Utilization(GpuIndex gpu) = 0;
  // Compute processes on the GPU, including those on its MIG devices.
  virtual Result<std::vector<GpuProcess>> ComputeProcesses(GpuIndex gpu) = 0;
};

}  // namespace carve::agent
