#include "agent/mig/discovery.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/nvml/nvml_abi.h"
#include "catalog/catalog.h"

namespace carve::agent {
namespace {

// Reads the profile table by enum, then each profile's placements by id.
Status ReadLiveTable(Nvml& nvml, DiscoveredGpu& out) {
  for (uint32_t e = 0; e < NVML_GPU_INSTANCE_PROFILE_COUNT; ++e) {
    CARVE_ASSIGN_OR_RETURN(auto info, nvml.GetGpuInstanceProfile(out.index, e));
    if (!info) {
      continue;
    }
    LiveProfile row{info->id, std::move(info), {}};
    CARVE_ASSIGN_OR_RETURN(row.placements, nvml.PossiblePlacements(out.index, row.id));
    out.profiles.push_back(std::move(row));
  }
  return OkStatus();
}

// With MIG off the table is not served, but placements are ("regardless of whether MIG is
// enabled", nvml.h): read them by the catalog's profile ids so they can still be checked.
void ReadPlacementsByCatalogIds(Nvml& nvml, DiscoveredGpu& out) {
  std::string first_error;
  for (const catalog::MigProfile& p : out.model->profiles) {
    auto placements = nvml.PossiblePlacements(out.index, p.id);
    if (placements) {
      out.profiles.push_back(LiveProfile{p.id, std::nullopt, *placements});
    } else if (first_error.empty()) {
      first_error = placements.error().message;
    }
  }
  if (out.profiles.empty()) {
    out.profiles_unread =
        fmt::format("MIG is {} and the driver served neither the profile table nor placements: {}",
                    out.mig.current_enabled ? "enabled" : "disabled",
                    first_error.empty() ? "no catalog profile to ask for" : first_error);
  }
}

}  // namespace

DiscoveredGpu DiscoverGpu(Nvml& nvml, GpuIndex gpu) {
  DiscoveredGpu out;
  out.index = gpu;
  auto fail = [&](Error e) {
    out.error = std::move(e);
    return out;
  };
  auto device = nvml.DeviceInfo(gpu);
  if (!device) {
    return fail(device.error());
  }
  out.device = std::move(device).value();
  if (auto model = catalog::FindGpuByPciDeviceId(out.device.pci_device_id)) {
    out.model = *model;
  }

  auto mode = nvml.GetMigMode(gpu);
  if (!mode && mode.error().code != ErrorCode::kUnimplemented) {
    return fail(mode.error());
  }
  out.mig_capable = mode.has_value();
  if (!out.mig_capable) {
    out.profiles_unread = "the GPU does not do MIG (nvmlDeviceGetMigMode: not supported)";
    return out;
  }
  out.mig = *mode;

  if (Status s = ReadLiveTable(nvml, out); !s.ok()) {
    return fail(s.error());
  }
  if (out.profiles.empty() && out.model != nullptr) {
    ReadPlacementsByCatalogIds(nvml, out);
  } else if (out.profiles.empty()) {
    out.profiles_unread = "the driver served no profile table and the GPU is not in the catalog";
  }
  return out;
}

Result<NodeInventory> DiscoverNode(Nvml& nvml) {
  NodeInventory node;
  CARVE_ASSIGN_OR_RETURN(node.driver_version, nvml.DriverVersion());
  CARVE_ASSIGN_OR_RETURN(uint32_t count, nvml.DeviceCount());
  const auto driver =
      catalog::DriverVersion::Parse(node.driver_version).value_or(catalog::DriverVersion{});
  for (uint32_t i = 0; i < count; ++i) {
    DiscoveredGpu gpu = DiscoverGpu(nvml, GpuIndex{i});
    if (gpu.error) {
      spdlog::warn("GPU {} could not be read: {}", i, gpu.error->message);
    } else {
      for (CatalogDifference& d : CrossCheck(gpu, driver)) {
        spdlog::warn("GPU {} differs from the catalog ({}): {}", i, DifferenceKindName(d.kind),
                     d.message);
        node.differences.push_back(std::move(d));
      }
    }
    node.gpus.push_back(std::move(gpu));
  }
  return node;
}

}  // namespace carve::agent
