// Node discovery: what NVML says about each GPU, mapped to its catalog model, with the live MIG
// profile table and placements cross-checked against the catalog.
//
// Live data wins: the agent reports what NVML says, and every disagreement with the catalog is
// returned in NodeInventory::differences (and logged as a warning) so the server can show it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/mig/catalog_check.h"
#include "agent/nvml/nvml.h"
#include "catalog/gpu_model.h"
#include "common/result.h"

namespace carve::agent {

// One row of the live profile table, with the placements NVML allows for it.
struct LiveProfile {
  NvmlProfileId id;
  // From nvmlDeviceGetGpuInstanceProfileInfoV; nullopt when the table could not be read (MIG
  // off) and the placements were read by the catalog's profile id instead.
  std::optional<GpuInstanceProfileInfo> info;
  std::vector<GiPlacement> placements;
};

struct DiscoveredGpu {
  GpuIndex index;
  NvmlDeviceInfo device;
  bool mig_capable = false;  // nvmlDeviceGetMigMode answered (not NOT_SUPPORTED).
  MigMode mig;
  const catalog::GpuModel* model = nullptr;  // By PCI device id; nullptr when not catalogued.
  std::vector<LiveProfile> profiles;         // By NVML enum order.
  // Why no profile could be read for the cross-check (empty when some were): a GPU that does no
  // MIG, or placements the driver refused. A report must say "nothing compared", not "match".
  std::string profiles_unread;
  // Set when the GPU stopped answering (e.g. NVML_ERROR_GPU_IS_LOST); the fields above are then
  // whatever was read before the failure.
  std::optional<Error> error;
};

struct NodeInventory {
  std::string driver_version;
  std::vector<DiscoveredGpu> gpus;
  std::vector<CatalogDifference> differences;
};

// Reads one GPU. Errors only for failures that are not about this GPU's health; a GPU that
// fails mid-read is returned with `error` set.
DiscoveredGpu DiscoverGpu(Nvml& nvml, GpuIndex gpu);

// Reads the whole node (driver version, every GPU) and cross-checks each GPU with the catalog.
// Errors when the node-level calls fail (driver version, device count).
Result<NodeInventory> DiscoverNode(Nvml& nvml);

}  // namespace carve::agent
