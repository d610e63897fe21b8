// LibNvml: Nvml over the real libnvidia-ml.so.1, loaded with dlopen (no link-time dependency).
//
// Load() opens the library and resolves every entry point of CARVE_NVML_FUNCTIONS up front, so a
// driver that lacks one fails at load time with a message naming the missing symbols instead of
// failing later mid-carve. The path is overridable, which is how tests load the fake
// libnvidia-ml.so.1 built from FakeNvmlCore and exercise this exact code path.
#pragma once

#include <memory>
#include <string>

#include "agent/nvml/nvml.h"
#include "agent/nvml/nvml_abi.h"

namespace carve::agent {

class LibNvml final : public Nvml {
 public:
  static constexpr const char* kDefaultPath = "libnvidia-ml.so.1";

  // kNotFound when the library cannot be opened (the message carries dlerror(); on a host
  // without the NVIDIA driver this is the normal outcome). kUnimplemented when it opens but
  // lacks entry points; the message lists every missing symbol.
  static Result<std::unique_ptr<LibNvml>> Load(const std::string& path = kDefaultPath);

  // Calls nvmlShutdown if Init succeeded and Shutdown was not called, then dlcloses.
  ~LibNvml() override;
  LibNvml(const LibNvml&) = delete;
  LibNvml& operator=(const LibNvml&) = delete;

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
  struct Api;
  LibNvml(void* handle, std::unique_ptr<Api> api);

  Result<nvmlDevice_t> Device(GpuIndex gpu);
  Result<nvmlGpuInstance_t> GpuInstance(GpuIndex gpu, GpuInstanceId gi);
  Result<std::vector<ComputeInstanceInfo>> ListComputeInstances(nvmlGpuInstance_t gi, GpuIndex gpu,
                                                                uint32_t gi_id);

  void* handle_;              // From dlopen; owned.
  std::unique_ptr<Api> api_;  // Resolved entry points; all non-null.
  bool initialized_ = false;
};

}  // namespace carve::agent
