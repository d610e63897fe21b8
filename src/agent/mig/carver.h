// Carver: applies a core::Layout to ONE GPU through Nvml, and tears it down again.
//
// Apply creates each instance in layout order with nvmlDeviceCreateGpuInstanceWithPlacement at
// the start the layout engine chose, adds a full-size compute instance, and reads back the MIG
// device UUID. Safety rules:
//   - one GPU per call; nothing here touches another GPU;
//   - a GPU that already holds exactly the wanted layout is adopted (idempotent re-apply: same
//     instances, same UUIDs, no NVML changes);
//   - a GPU with running compute processes is never re-carved (kFailedPrecondition naming pids);
//   - a GPU whose MIG mode waits for a reset is reported (kFailedPrecondition) and not retried;
//   - a failure partway destroys what this call created, in reverse order, so the GPU is left
//     empty; the error is the NVML failure, with which instance it was;
//   - the layout's starts are checked against NVML's live placements first (live data wins):
//     kInvalidArgument naming the profile, the start and what NVML allows.
// Not thread-safe; the agent serialises carving per node.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "agent/nvml/nvml.h"
#include "core/layout.h"

namespace carve::agent {

// One carved partition: a GPU instance with its full-size compute instance.
struct CarvedInstance {
  const catalog::MigProfile* profile = nullptr;
  int start = 0;
  GpuInstanceId gpu_instance;
  ComputeInstanceId compute_instance;
  std::string mig_uuid;  // "MIG-...", for CUDA_VISIBLE_DEVICES.
};

class Carver {
 public:
  explicit Carver(Nvml& nvml) : nvml_(nvml) {}

  // Carves `layout` on `gpu`, replacing whatever other layout is there (when the GPU is idle).
  // Returns the instances in layout order. Errors:
  //   kInvalidArgument     the layout is for another GPU model, or a start NVML does not allow;
  //   kFailedPrecondition  MIG off or pending a reset, running processes, GPU busy (IN_USE);
  //   kResourceExhausted   NVML refused a creation (nothing is left carved);
  //   kUnavailable         the GPU is lost;
  //   kInternal            rollback itself failed (the message lists what remains).
  Result<std::vector<CarvedInstance>> Apply(GpuIndex gpu, const core::Layout& layout);

  // Destroys the given instances (as Apply returned them) in reverse order.
  Status Teardown(GpuIndex gpu, std::span<const CarvedInstance> carved);

  // Destroys every instance on the GPU (compute instances first, GPU instances by descending
  // id). kFailedPrecondition naming pids when processes run on the GPU.
  Status Clear(GpuIndex gpu);

 private:
  Status CheckMigReady(GpuIndex gpu, const NvmlDeviceInfo& device);
  Status CheckIdle(GpuIndex gpu, std::string_view action);
  Status CheckPlacements(GpuIndex gpu, const core::Layout& layout);
  Result<std::vector<CarvedInstance>> Adopt(GpuIndex gpu, const core::Layout& layout,
                                            const std::vector<GpuInstanceInfo>& existing);
  Result<std::vector<CarvedInstance>> Create(GpuIndex gpu, const core::Layout& layout);
  Status FillUuids(GpuIndex gpu, std::vector<CarvedInstance>& carved);
  // Best-effort reverse-order destroy; the error lists every step that failed.
  Status Rollback(GpuIndex gpu, std::span<const CarvedInstance> carved);

  Nvml& nvml_;
};

}  // namespace carve::agent
