#include "agent/mig/catalog_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "agent/mig/discovery.h"
#include "catalog/catalog.h"
#include "catalog/lookup.h"

namespace carve::agent {

std::string_view DifferenceKindName(DifferenceKind kind) {
  switch (kind) {
    case DifferenceKind::kUnknownGpu:
      return "unknown-gpu";
    case DifferenceKind::kMigSupport:
      return "mig-support";
    case DifferenceKind::kDriverTooOld:
      return "driver-too-old";
    case DifferenceKind::kMissingLive:
      return "missing-live";
    case DifferenceKind::kMissingCatalog:
      return "missing-catalog";
    case DifferenceKind::kName:
      return "name";
    case DifferenceKind::kSliceCount:
      return "slice-count";
    case DifferenceKind::kInstanceCount:
      return "instance-count";
    case DifferenceKind::kSms:
      return "sms";
    case DifferenceKind::kMemory:
      return "memory";
    case DifferenceKind::kPlacements:
      return "placements";
  }
  return "unknown";
}

namespace {

// "{0,4}:4", the `nvidia-smi mig -lgipp` spelling.
std::string PlacementText(const std::vector<GiPlacement>& placements) {
  std::vector<uint32_t> starts;
  std::vector<uint32_t> sizes;
  for (const auto& p : placements) {
    starts.push_back(p.start);
    if (std::find(sizes.begin(), sizes.end(), p.size) == sizes.end()) {
      sizes.push_back(p.size);
    }
  }
  return fmt::format("{{{}}}:{}", fmt::join(starts, ","), fmt::join(sizes, "/"));
}

std::vector<GiPlacement> CatalogPlacements(const catalog::MigProfile& p) {
  std::vector<GiPlacement> out;
  for (uint8_t s : p.starts) {
    out.push_back(GiPlacement{s, static_cast<uint32_t>(p.placement_size)});
  }
  return out;
}

class Checker {
 public:
  Checker(const DiscoveredGpu& gpu, const catalog::DriverVersion& driver)
      : gpu_(gpu), driver_(driver), model_(*gpu.model) {}

  std::vector<CatalogDifference> Run() {
    if (model_.mig_capable() != gpu_.mig_capable) {
      CheckMigSupport();
      return std::move(out_);
    }
    bool table_read = false;
    for (const LiveProfile& live : gpu_.profiles) {
      table_read = table_read || live.info.has_value();
      const catalog::MigProfile* cat = catalog::FindProfileById(model_, live.id);
      if (cat == nullptr) {
        Add(DifferenceKind::kMissingCatalog, live.info ? live.info->name : "", "(none)",
            fmt::format("profile id {}", live.id.value()),
            fmt::format("NVML offers profile id {} ({}) which the catalog row {} lacks",
                        live.id.value(), live.info ? live.info->name : "unnamed", model_.id));
        continue;
      }
      CheckProfile(*cat, live);
    }
    if (table_read) {
      CheckMissingLive();
    }
    return std::move(out_);
  }

 private:
  void Add(DifferenceKind kind, std::string_view profile, std::string catalog_value,
           std::string live_value, std::string message) {
    out_.push_back(CatalogDifference{gpu_.index, kind, std::string(profile),
                                     std::move(catalog_value), std::move(live_value),
                                     std::move(message)});
  }

  void CheckMigSupport() {
    if (model_.mig_capable() && !driver_.IsUnset() && driver_ < model_.min_driver) {
      Add(DifferenceKind::kDriverTooOld, "", model_.min_driver.ToString(), driver_.ToString(),
          fmt::format("GPU {} ({}) needs driver {} or newer for MIG; this host runs {}",
                      gpu_.index.value(), model_.id, model_.min_driver.ToString(),
                      driver_.ToString()));
      return;
    }
    Add(DifferenceKind::kMigSupport, "", model_.mig_capable() ? "MIG" : "no MIG",
        gpu_.mig_capable ? "MIG" : "no MIG",
        fmt::format("the catalog says {} {} MIG but NVML says it {}", model_.id,
                    model_.mig_capable() ? "supports" : "does not support",
                    gpu_.mig_capable ? "does" : "does not"));
  }

  void CheckProfile(const catalog::MigProfile& cat, const LiveProfile& live) {
    const std::string name(cat.name);
    const std::string where = fmt::format("GPU {} ({}) profile {} (id {})", gpu_.index.value(),
                                          model_.id, name, cat.id.value());
    if (live.info) {
      const GpuInstanceProfileInfo& info = *live.info;
      if (!info.name.empty() && !catalog::EqualsIgnoreCase(info.name, cat.name)) {
        Add(DifferenceKind::kName, name, name, info.name,
            fmt::format("{}: NVML names it {}", where, info.name));
      }
      CompareNumber(DifferenceKind::kSliceCount, cat, cat.compute_slices, info.slice_count, where,
                    "compute slices");
      CompareNumber(DifferenceKind::kInstanceCount, cat, cat.max_count, info.instance_count, where,
                    "instances per GPU");
      if (cat.sms > 0) {
        CompareNumber(DifferenceKind::kSms, cat, cat.sms, info.multiprocessor_count, where, "SMs");
      }
      if (cat.memory_mib > 0) {
        CompareNumber(DifferenceKind::kMemory, cat, cat.memory_mib, info.memory_mib, where, "MiB");
      }
    }
    const std::vector<GiPlacement> expected = CatalogPlacements(cat);
    if (live.placements != expected) {
      Add(DifferenceKind::kPlacements, name, PlacementText(expected),
          PlacementText(live.placements),
          fmt::format("{}: catalog placements {}, NVML placements {}", where,
                      PlacementText(expected), PlacementText(live.placements)));
    }
  }

  template <typename A, typename B>
  void CompareNumber(DifferenceKind kind, const catalog::MigProfile& cat, A catalog_value,
                     B live_value, const std::string& where, std::string_view unit) {
    if (static_cast<int64_t>(catalog_value) == static_cast<int64_t>(live_value)) {
      return;
    }
    Add(kind, cat.name, std::to_string(catalog_value), std::to_string(live_value),
        fmt::format("{}: catalog {} {}, NVML {} {}", where, catalog_value, unit, live_value, unit));
  }

  void CheckMissingLive() {
    for (const catalog::MigProfile& cat : model_.profiles) {
      // A profile newer than the driver is expected to be absent.
      if (!cat.min_driver.IsUnset() && !driver_.IsUnset() && driver_ < cat.min_driver) {
        continue;
      }
      const bool present = std::any_of(gpu_.profiles.begin(), gpu_.profiles.end(),
                                       [&](const LiveProfile& l) { return l.id == cat.id; });
      if (present) {
        continue;
      }
      Add(DifferenceKind::kMissingLive, cat.name, fmt::format("id {}", cat.id.value()), "(none)",
          fmt::format("GPU {} ({}): the catalog's profile {} (id {}) is not in NVML's table",
                      gpu_.index.value(), model_.id, cat.name, cat.id.value()));
    }
  }

  const DiscoveredGpu& gpu_;
  const catalog::DriverVersion& driver_;
  const catalog::GpuModel& model_;
  std::vector<CatalogDifference> out_;
};

}  // namespace

std::vector<CatalogDifference> CrossCheck(const DiscoveredGpu& gpu,
                                          const catalog::DriverVersion& driver) {
  if (gpu.model == nullptr) {
    return {CatalogDifference{
        gpu.index, DifferenceKind::kUnknownGpu, "", "(none)",
        fmt::format("{:#010x}", gpu.device.pci_device_id),
        fmt::format("GPU {} ({}, PCI device id {:#010x}) is not in the catalog; carve cannot lay "
                    "it out",
                    gpu.index.value(), gpu.device.name, gpu.device.pci_device_id)}};
  }
  return Checker(gpu, driver).Run();
}

}  // namespace carve::agent
