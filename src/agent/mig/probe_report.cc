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
  j["profiles_compared"] = gpu.profiles.size();
  if (!gpu.profiles_unread.empty()) j["profiles_unread"] = gpu.profiles_unread;
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
  size_t profiles_compared = 0;
  for (const DiscoveredGpu& gpu : node.gpus) profiles_compared += gpu.profiles.size();
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
                  {"placement_differences", placement_differences},
                  {"profiles_compared", profiles_compared}};
  return j;
}

nlohmann::json SkippedReport(const std::string& reason) {
  return {{"status", "skipped"}, {"reason", reason}};
}

nlohmann::json ErrorReport(const std::string& reason) {
  return {{"status", "error"}, {"reason", reason}};
}

nlohmann::json ReadOnlyCallsReport(Nvml& nvml, uint32_t gpu_count) {
  nlohmann::json out = nlohmann::json::array();
  auto answer = [](const auto& result, auto&& value) -> nlohmann::json {
    if (!result) return {{"error", result.error().message}};
    return value(*result);
  };
  for (uint32_t i = 0; i < gpu_count; ++i) {
    const GpuIndex gpu{i};
    nlohmann::json row{{"gpu", i}};
    row["gpu_instances"] = answer(nvml.ListGpuInstances(gpu), [](const auto& v) {
      nlohmann::json list = nlohmann::json::array();
      for (const GpuInstanceInfo& gi : v) {
        list.push_back({{"id", gi.id.value()},
                        {"profile_id", gi.profile_id.value()},
                        {"start", gi.placement.start},
                        {"size", gi.placement.size},
                        {"compute_instances", gi.compute_instances.size()}});
      }
      return list;
    });
    row["mig_devices"] = answer(nvml.ListMigDevices(gpu), [](const auto& v) {
      nlohmann::json list = nlohmann::json::array();
      for (const MigDeviceInfo& d : v) list.push_back(d.uuid);
      return list;
    });
    row["compute_processes"] = answer(nvml.ComputeProcesses(gpu), [](const auto& v) {
      nlohmann::json list = nlohmann::json::array();
      for (const GpuProcess& p : v) list.push_back({{"pid", p.pid}, {"mib", p.used_memory_mib}});
      return list;
    });
    row["utilization"] = answer(nvml.Utilization(gpu), [](const GpuUtilization& u) {
      return nlohmann::json{{"gpu_percent", u.gpu_percent}, {"memory_percent", u.memory_percent}};
    });
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace carve::agent
