// ReadOnlyNvml: an Nvml that forwards reads and refuses every call that would change the GPU.
//
// The read-only GPU probe (carve-nvml-probe, tests/gpu/run.sh) talks to real hardware only
// through it, so "never changes MIG state" holds by construction, not by care. Refused calls
// return kFailedPrecondition naming the call and never reach NVML.
#pragma once

#include "agent/nvml/nvml.h"

namespace carve::agent {

class ReadOnlyNvml final : public Nvml {
 public:
  explicit ReadOnlyNvml(Nvml& inner) : inner_(inner) {}

  Status Init() override { return inner_.Init(); }
  Status Shutdown() override { return inner_.Shutdown(); }
  Result<std::string> DriverVersion() override { return inner_.DriverVersion(); }
  Result<uint32_t> DeviceCount() override { return inner_.DeviceCount(); }
  Result<NvmlDeviceInfo> DeviceInfo(GpuIndex gpu) override { return inner_.DeviceInfo(gpu); }
  Result<MigMode> GetMigMode(GpuIndex gpu) override { return inner_.GetMigMode(gpu); }
  Result<std::optional<GpuInstanceProfileInfo>> GetGpuInstanceProfile(
      GpuIndex gpu, uint32_t profile_enum) override {
    return inner_.GetGpuInstanceProfile(gpu, profile_enum);
  }
  Result<std::vector<GiPlacement>> PossiblePlacements(GpuIndex gpu,
                                                      NvmlProfileId profile) override {
    return inner_.PossiblePlacements(gpu, profile);
  }
  Result<std::vector<GpuInstanceInfo>> ListGpuInstances(GpuIndex gpu) override {
    return inner_.ListGpuInstances(gpu);
  }
  Result<std::vector<MigDeviceInfo>> ListMigDevices(GpuIndex gpu) override {
    return inner_.ListMigDevices(gpu);
  }
  Result<GpuUtilization> Utilization(GpuIndex gpu) override { return inner_.Utilization(gpu); }
  Result<std::vector<GpuProcess>> ComputeProcesses(GpuIndex gpu) override {
    return inner_.ComputeProcesses(gpu);
  }

  Result<GpuInstanceId> CreateGpuInstance(GpuIndex, NvmlProfileId, GiPlacement) override {
    return Refused("nvmlDeviceCreateGpuInstanceWithPlacement");
  }
  Result<ComputeInstanceId> CreateFullComputeInstance(GpuIndex, GpuInstanceId) override {
    return Refused("nvmlGpuInstanceCreateComputeInstance");
  }
  Status DestroyComputeInstance(GpuIndex, GpuInstanceId, ComputeInstanceId) override {
    return Refused("nvmlComputeInstanceDestroy");
  }
  Status DestroyGpuInstance(GpuIndex, GpuInstanceId) override {
    return Refused("nvmlGpuInstanceDestroy");
  }

 private:
  static Error Refused(std::string_view call) {
    return FailedPrecondition(std::string(call) + " refused: this NVML session is read-only");
  }
  Nvml& inner_;
};

}  // namespace carve::agent
