// FakeNvml: the in-process Nvml over a FakeNvmlCore, for unit tests of discovery and carving.
//
// It behaves as LibNvml over the fake libnvidia-ml.so.1 does (same core, same error mapping),
// minus the C ABI. It starts initialised, so tests can use it at once; core() exposes the
// failure-injection and state controls (FailNthCreate, SetMigMode/SimulateReset, AddProcess,
// SetGpuLost, SetDriverVersion).
#pragma once

#include <memory>
#include <mutex>
#include <string_view>

#include "agent/nvml/fake_node_config.h"
#include "agent/nvml/fake_nvml_core.h"
#include "agent/nvml/nvml.h"

namespace carve::agent {

class FakeNvml final : public Nvml {
 public:
  explicit FakeNvml(const FakeNodeConfig& config);
  // Parses a FakeNodeConfig text ("gpus: 8 x a100-40gb, mig: enabled").
  static Result<std::unique_ptr<FakeNvml>> FromText(std::string_view config_text);

  FakeNvmlCore& core() { return core_; }
  const FakeNvmlCore& core() const { return core_; }
  // core().AddProcess, safe beside an agent thread that lists processes (ComputeProcesses): the
  // one change a test makes while an agent runs. Everything else in core() is not thread-safe.
  void AddProcess(uint32_t gpu, uint32_t pid, uint64_t used_mib);

  Status Init() override;
  Status Shutdown() override;
  Result<std::string> DriverVersion() override;
  Result<uint32_t> DeviceCount() override;
  Result<NvmlDeviceInfo> DeviceInfo(GpuIndex gpu) override;
  Result<MigMode> GetMigMode(GpuIndex gpu) override;
  Result<std::optional<GpuInstanceProfileInfo>> GetGpuInstanceProfile(
      GpuIndex gpu, uint32_t profile_enum) override;
  Result<std::vector<GiPlacement>> PossiblePlacements(GpuIndex gpu, NvmlProfileId profile) override;
  Result<GpuInstanceId> CreateGpuInstance(GpuIndex gpu, NvmlProfileId profile,
                                          GiPlacement placement) override;
  Result<ComputeInstanceId> CreateFullComputeInstance(GpuIndex gpu, GpuInstanceId gi) override;
  Status DestroyComputeInstance(GpuIndex gpu, GpuInstanceId gi, ComputeInstanceId ci) override;
  Status DestroyGpuInstance(GpuIndex gpu, GpuInstanceId gi) override;
  Result<std::vector<GpuInstanceInfo>> ListGpuInstances(GpuIndex gpu) override;
  Result<std::vector<MigDeviceInfo>> ListMigDevices(GpuIndex gpu) override;
  Result<GpuUtilization> Utilization(GpuIndex gpu) override;
  Result<std::vector<GpuProcess>> ComputeProcesses(GpuIndex gpu) override;

 private:
  FakeNvmlCore core_;
  std::mutex processes_mu_;  // core_'s process lists
};

}  // namespace carve::agent
