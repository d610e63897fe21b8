#include "core/layout_placer.h"

#include <fmt/format.h>

#include "catalog/catalog.h"
#include "core/layout_search.h"

namespace carve::core {
namespace {

using catalog::GpuModel;
using catalog::MigProfile;

// "0-3, 6" for the set units of `mask` below `units`; "none" when empty.
std::string UnitsText(uint64_t mask, int units) {
  std::string out;
  int i = 0;
  while (i < units) {
    if ((mask & UnitMask(i, 1)) == 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j + 1 < units && (mask & UnitMask(j + 1, 1)) != 0) {
      ++j;
    }
    if (!out.empty()) {
      out += ", ";
    }
    out += i == j ? fmt::format("{}", i) : fmt::format("{}-{}", i, j);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

Status CheckGeometry(const Layout& pinned) {
  const GpuModel& gpu = *pinned.gpu;
  uint64_t occupied = 0;
  for (const PlacedInstance& inst : pinned.instances) {
    if (ProfileIndex(gpu, inst.profile) < 0) {
      return InvalidArgument(fmt::format(
          "pinned instance {} is not one of {}'s profiles",
          inst.profile == nullptr ? "(null)" : std::string(inst.profile->name), gpu.id));
    }
    const MigProfile& p = *inst.profile;
    if (!StartFree(p, inst.start, 0)) {
      return InvalidArgument(fmt::format(
          "{} provides {}; pinned instance {}@{} is not at an allowed start (rule: allowed "
          "starts)",
          gpu.id, PlacementsText(p), catalog::SageMakerName(p), inst.start));
    }
    const uint64_t mask = UnitMask(inst.start, p.placement_size);
    if ((occupied & mask) != 0) {
      return InvalidArgument(fmt::format(
          "pinned instance {}@{} needs units {} but units {} are taken (rule: non-overlapping "
          "placement)",
          catalog::SageMakerName(p), inst.start, UnitsText(mask, gpu.placement_units),
          UnitsText(occupied & mask, gpu.placement_units)));
    }
    occupied |= mask;
  }
  return OkStatus();
}

ProfileTally TallyOf(const Layout& layout) {
  ProfileTally tally(*layout.gpu);
  for (const PlacedInstance& inst : layout.instances) {
    tally.Add(*inst.profile);
  }
  return tally;
}

std::string DescribeAll(std::span<const LayoutRule> rules, const ProfileTally& tally,
                        const LayoutOptions& options, std::string_view text) {
  std::string out;
  for (LayoutRule rule : rules) {
    if (!out.empty()) {
      out += "\n";
    }
    out += DescribeBrokenRule(rule, tally, options, text);
  }
  return out;
}

}  // namespace

Status CheckPinned(const Layout& pinned, const LayoutOptions& options) {
  if (pinned.gpu == nullptr) {
    return InvalidArgument("pinned layout names no GPU");
  }
  const GpuModel& gpu = *pinned.gpu;
  if (!gpu.mig_capable() || !HasPlacementGeometry(gpu)) {
    return FailedPrecondition(fmt::format(
        "{} has no MIG placement data in the catalog; nothing can be placed on it", gpu.id));
  }
  CARVE_RETURN_IF_ERROR(CheckGeometry(pinned));
  const ProfileTally tally = TallyOf(pinned);
  LayoutOptions pinned_options = options;
  pinned_options.sagemaker_rules = options.sagemaker_rules && !pinned.instances.empty();
  const std::vector<LayoutRule> broken = BrokenRules(tally, pinned_options, RuleScope::kWithSums);
  if (broken.empty()) {
    return OkStatus();
  }
  std::string message = DescribeAll(broken, tally, pinned_options,
                                    fmt::format("pinned {}", LayoutText(pinned.instances)));
  if (IsDriverRule(broken.front())) {
    return FailedPrecondition(std::move(message));
  }
  return InvalidArgument(std::move(message));
}

Result<std::vector<Opening>> OpenProfiles(const Layout& pinned, const LayoutOptions& options) {
  CARVE_RETURN_IF_ERROR(CheckPinned(pinned, options));
  const GpuModel& gpu = *pinned.gpu;
  ProfileTally tally = TallyOf(pinned);
  const uint64_t occupied = OccupiedUnits(pinned.instances);
  std::vector<Opening> openings;
  for (const MigProfile& p : gpu.profiles) {
    if (!ProfileAllowed(gpu, p, options)) {
      continue;
    }
    tally.Add(p);
    const bool keeps = KeepsRules(tally, options, RuleScope::kWithSums);
    tally.Remove(p);
    if (!keeps) {
      continue;
    }
    Opening opening{&p, {}};
    for (uint8_t start : p.starts) {
      if (StartFree(p, start, occupied)) {
        opening.starts.push_back(start);
      }
    }
    if (!opening.starts.empty()) {
      openings.push_back(std::move(opening));
    }
  }
  return openings;
}

Result<Addition> PlaceAdditions(const Layout& pinned, std::span<const MigProfile* const> additions,
                                const LayoutOptions& options) {
  // An empty pinned layout is a fresh GPU: SageMaker's non-empty rule applies to the result.
  LayoutOptions pinned_options = options;
  pinned_options.sagemaker_rules = false;
  CARVE_RETURN_IF_ERROR(CheckPinned(pinned, pinned_options));
  const GpuModel& gpu = *pinned.gpu;
  ProfileTally tally = TallyOf(pinned);
  for (const MigProfile* p : additions) {
    if (ProfileIndex(gpu, p) < 0) {
      return InvalidArgument(fmt::format("addition {} is not one of {}'s profiles",
                                         p == nullptr ? "(null)" : std::string(p->name), gpu.id));
    }
    tally.Add(*p);
  }
  const std::string text =
      fmt::format("pinned {} plus {}", LayoutText(pinned.instances), LayoutText(additions));
  Addition out;
  const std::vector<LayoutRule> broken = BrokenRules(tally, options, RuleScope::kWithSums);
  if (!broken.empty()) {
    out.reason = DescribeAll(broken, tally, options, text);
    return out;
  }
  const uint64_t occupied = OccupiedUnits(pinned.instances);
  std::optional<std::vector<PlacedInstance>> placed = FindPlacement(gpu, occupied, additions);
  if (!placed) {
    out.reason = fmt::format(
        "{} has placement units {} free of {}; {} keeps every counting rule but has no "
        "non-overlapping placement ({}) (rule: non-overlapping placement)",
        gpu.id, UnitsText(UnitMask(0, gpu.placement_units) & ~occupied, gpu.placement_units),
        gpu.placement_units, text, PlacementsText(additions));
    return out;
  }
  out.verdict = Addition::Verdict::kFits;
  out.layout.gpu = &gpu;
  out.layout.instances = pinned.instances;
  out.layout.instances.insert(out.layout.instances.end(), placed->begin(), placed->end());
  return out;
}

}  // namespace carve::core
