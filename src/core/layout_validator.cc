#include "core/layout_validator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "catalog/catalog.h"
#include "core/layout_search.h"

namespace carve::core {

using catalog::GpuModel;
using catalog::MigProfile;

Result<std::vector<const MigProfile*>> ResolveProfiles(const GpuModel& gpu,
                                                       std::span<const std::string> names) {
  std::vector<const MigProfile*> profiles;
  std::string unknown;
  for (const std::string& name : names) {
    Result<const MigProfile*> found = catalog::FindProfile(gpu, name);
    if (found.has_value()) {
      profiles.push_back(*found);
      continue;
    }
    if (!unknown.empty()) {
      unknown += "\n";
    }
    unknown += found.error().message;
  }
  if (!unknown.empty()) {
    return NotFound(std::move(unknown));
  }
  return profiles;
}

Result<Layout> LayoutAt(const GpuModel& gpu,
                        std::span<const std::pair<std::string, int>> placements) {
  Layout out{&gpu, {}};
  for (const auto& [name, start] : placements) {
    CARVE_ASSIGN_OR_RETURN(const MigProfile* profile, catalog::FindProfile(gpu, name));
    if (std::find(profile->starts.begin(), profile->starts.end(), start) == profile->starts.end()) {
      return InvalidArgument(
          fmt::format("{} on {} cannot start at placement unit {}; allowed: [{}]", profile->name,
                      gpu.id, start, fmt::join(profile->starts, ", ")));
    }
    const PlacedInstance inst{profile, start};
    for (const PlacedInstance& other : out.instances) {
      if (inst.start < other.end() && other.start < inst.end()) {
        return InvalidArgument(fmt::format("{}@{} overlaps {}@{} on {}", profile->name, start,
                                           other.profile->name, other.start, gpu.id));
      }
    }
    out.instances.push_back(inst);
  }
  return out;
}

Result<Layout> ValidateLayout(const GpuModel& gpu, std::span<const std::string> names,
                              const LayoutOptions& options) {
  if (!gpu.mig_capable()) {
    return FailedPrecondition(
        fmt::format("{} provides no MIG profiles; a layout needs a MIG GPU", gpu.id));
  }
  CARVE_ASSIGN_OR_RETURN(auto profiles, ResolveProfiles(gpu, names));
  return ValidateProfiles(gpu, profiles, options);
}

Result<Layout> ValidateProfiles(const GpuModel& gpu, std::span<const MigProfile* const> profiles,
                                const LayoutOptions& options) {
  if (!gpu.mig_capable()) {
    return FailedPrecondition(
        fmt::format("{} provides no MIG profiles; a layout needs a MIG GPU", gpu.id));
  }
  ProfileTally tally(gpu);
  for (const MigProfile* p : profiles) {
    if (ProfileIndex(gpu, p) < 0) {
      return InvalidArgument(fmt::format("profile {} is not one of {}'s profiles",
                                         p == nullptr ? "(null)" : std::string(p->name), gpu.id));
    }
    tally.Add(*p);
  }
  const std::string text = LayoutText(profiles);
  const std::vector<LayoutRule> broken = BrokenRules(tally, options, RuleScope::kWithSums);
  if (!broken.empty()) {
    std::string message;
    for (LayoutRule rule : broken) {
      if (!message.empty()) {
        message += "\n";
      }
      message += DescribeBrokenRule(rule, tally, options, text);
    }
    if (IsDriverRule(broken.front())) {
      return FailedPrecondition(std::move(message));
    }
    return InvalidArgument(std::move(message));
  }
  if (!HasPlacementGeometry(gpu)) {
    return FailedPrecondition(fmt::format(
        "{} keeps every counting rule for layout {}, but the catalog has no placement data for "
        "{} (placement confidence too low to place instances)",
        gpu.id, text, gpu.id));
  }
  std::optional<std::vector<PlacedInstance>> placed = FindPlacement(gpu, 0, profiles);
  if (!placed) {
    return InvalidArgument(fmt::format(
        "{} provides {} placement units ({}); layout {} keeps every counting rule but has no "
        "non-overlapping placement (rule: non-overlapping placement)",
        gpu.id, gpu.placement_units, PlacementsText(profiles), text));
  }
  return Layout{&gpu, std::move(*placed)};
}

Result<InstancePartitions> PartitionsPerInstance(const catalog::InstanceType& type,
                                                 const Layout& layout) {
  if (layout.gpu == nullptr || layout.gpu->id != type.gpu_id) {
    return InvalidArgument(fmt::format(
        "{} carries {} GPUs; the layout is for {} (rule: a layout is carved on its own GPU model)",
        type.id, type.gpu_id, layout.gpu == nullptr ? "no GPU" : layout.gpu->id));
  }
  InstancePartitions out;
  out.gpu_count = type.gpu_count;
  for (const PlacedInstance& inst : layout.instances) {
    auto row = std::find_if(out.counts.begin(), out.counts.end(),
                            [&](const auto& c) { return c.profile == inst.profile; });
    if (row == out.counts.end()) {
      row = out.counts.insert(out.counts.end(), {inst.profile, 0, 0});
    }
    row->per_gpu += 1;
    row->per_instance += type.gpu_count;
    out.total += type.gpu_count;
  }
  return out;
}

}  // namespace carve::core
