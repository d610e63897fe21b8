#include "agent/mig/probe_report.h"

#include <fmt/format.h>

namespace carve::agent {
namespace {

nlohmann::json PlacementsJson(const std::vector<GiPlacement>& placements) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : placements) {
    out.push_back({{"start", p.start}, {"size", p.size}});
  }
  return out;
}

nlohmann::json GpuJson(const DiscoveredGpu& gpu) {
  nlohmann::json j;
  j["index"] = gpu.index.value();
  j["uuid"] = gpu.device.uuid;
  j["name"] = gpu.device.name;
  j["pci_device_id"] = fmt::format("{:#010x}", gpu.device.pci_device_id);
  j["pci_bus_id"] = gpu.device.pci_bus_id;
  j["memory_total_mib"] = gpu.device.memory_total_mib;
  j["catalog_model"] =
      gpu.model != nullptr ? nlohmann::json(std::string(gpu.model->id)) : nlohmann::json(nullptr);
  j["mig_capable"] = gpu.mig_capable;
  j["mig_current"] = gpu.mig.current_enabled ? "enabled" : "disabled";
  j["mig_pending"] = gpu.mig.pending_enabled ? "enabled" : "disabled";
  j["profiles"] = nlohmann::json::array();
  for (const LiveProfile& p : gpu.profiles) {
    nlohmann::json row;
    row["id"] = p.id.value();
    row["source"] = p.info ? "profile-table" : "catalog-id";
    if (p.info) {
      row["nvml_enum"] = p.info->nvml_enum;
      row["name"] = p.info->name;
      row["slices"] = p.info->slice_count;
      row["instances"] = p.info->instance_count;
      row["sms"] = p.info->multiprocessor_count;
      row["memory_mib"] = p.info->memory_mib;
    }
    row["placements"] = PlacementsJson(p.placements);
    j["profiles"].push_back(std::move(row));
  }
  if (gpu.error) {
    j["error"] = gpu.error->message;
  }
  return j;
}

}  // namespace

nlohmann::json ProbeReport(const NodeInventory& node) {
  nlohmann::json j;
  j["status"] = "ok";
  j["driver_version"] = node.driver_version;
  j["gpus"] = nlohmann::json::array();
  for (const DiscoveredGpu& gpu : node.gpus) {
    j["gpus"].push_back(GpuJson(gpu));
  }
  j["differences"] = nlohmann::json::array();
  int placement_differences = 0;
  for (const CatalogDifference& d : node.differences) {
    if (d.kind == DifferenceKind::kPlacements) {
      ++placement_differences;
    }
    j["differences"].push_back({{"gpu", d.gpu.value()},
                                {"kind", std::string(DifferenceKindName(d.kind))},
                                {"profile", d.profile},
                                {"catalog", d.catalog_value},
                                {"live", d.live_value},
                                {"message", d.message}});
  }
  j["summary"] = {{"gpus", node.gpus.size()},
                  {"differences", node.differences.size()},
                  {"placement_differences", placement_differences}};
  return j;
}

nlohmann::json SkippedReport(const std::string& reason) {
  return {{"status", "skipped"}, {"reason", reason}};
}

}  // namespace carve::agent
