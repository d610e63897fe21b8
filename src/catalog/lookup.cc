#include "catalog/lookup.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace carve::catalog {
namespace {

constexpr std::string_view kSageMakerPrefix = "mig-";
constexpr std::string_view kInstancePrefix = "ml.";

bool StartsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && EqualsIgnoreCase(text.substr(0, prefix.size()), prefix);
}

std::string JoinIds(std::span<const GpuModel> gpus) {
  std::string out;
  for (const GpuModel& g : gpus) {
    out += (out.empty() ? "" : ", ") + std::string(g.id);
  }
  return out;
}

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

Result<const GpuModel*> FindGpuIn(std::span<const GpuModel> gpus, std::string_view name) {
  for (const GpuModel& g : gpus) {
    if (EqualsIgnoreCase(g.id, name) || EqualsIgnoreCase(g.display_name, name)) {
      return &g;
    }
    for (std::string_view alias : g.aliases) {
      if (EqualsIgnoreCase(alias, name)) {
        return &g;
      }
    }
  }
  return NotFound(fmt::format("unknown GPU '{}'; known GPUs: {}", name, JoinIds(gpus)));
}

Result<const GpuModel*> FindGpuByPciDeviceIdIn(std::span<const GpuModel> gpus,
                                               uint32_t pci_device_id) {
  for (const GpuModel& g : gpus) {
    if (std::ranges::find(g.pci_device_ids, pci_device_id) != g.pci_device_ids.end()) {
      return &g;
    }
  }
  return NotFound(fmt::format("no GPU in the catalog has PCI device id 0x{:08X}", pci_device_id));
}

Result<const MigProfile*> FindProfileIn(const GpuModel& gpu, std::string_view name) {
  if (!gpu.mig_capable()) {
    return NotFound(
        fmt::format("{} does not support MIG, so it has no profile '{}'", gpu.id, name));
  }
  std::string_view bare = name;
  if (StartsWithIgnoreCase(bare, kSageMakerPrefix)) {
    bare.remove_prefix(kSageMakerPrefix.size());
  }
  for (const MigProfile& p : gpu.profiles) {
    if (EqualsIgnoreCase(p.name, bare)) {
      return &p;
    }
  }
  std::string known;
  for (const MigProfile& p : gpu.profiles) {
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  return NotFound(
      fmt::format("{} has no MIG profile '{}'; its profiles are {}", gpu.id, name, known));
}

Result<const InstanceType*> FindInstanceTypeIn(std::span<const InstanceType> types,
                                               std::string_view id) {
  for (const InstanceType& t : types) {
    std::string_view bare = t.id;
    if (StartsWithIgnoreCase(bare, kInstancePrefix)) {
      bare.remove_prefix(kInstancePrefix.size());
    }
    if (EqualsIgnoreCase(t.id, id) || EqualsIgnoreCase(bare, id)) {
      return &t;
    }
  }
  std::string known;
  for (const InstanceType& t : types) {
    known += (known.empty() ? "" : ", ") + std::string(t.id);
  }
  return NotFound(fmt::format("unknown instance type '{}'; known types: {}", id, known));
}

ProfileSuffix SuffixOfName(std::string_view profile_name) {
  // Longest first: "+me.all" also ends in neither "+me" nor "-me", but keep the order explicit.
  for (ProfileSuffix s :
       {ProfileSuffix::kMeAll, ProfileSuffix::kMe, ProfileSuffix::kNoMe, ProfileSuffix::kGfx}) {
    if (profile_name.ends_with(SuffixText(s))) {
      return s;
    }
  }
  return ProfileSuffix::kNone;
}

std::string_view SuffixText(ProfileSuffix suffix) {
  switch (suffix) {
    case ProfileSuffix::kNone:
      return "";
    case ProfileSuffix::kMe:
      return "+me";
    case ProfileSuffix::kNoMe:
      return "-me";
    case ProfileSuffix::kGfx:
      return "+gfx";
    case ProfileSuffix::kMeAll:
      return "+me.all";
  }
  return "";
}

std::string_view ConfidenceName(Confidence confidence) {
  switch (confidence) {
    case Confidence::kHigh:
      return "high";
    case Confidence::kMediumHigh:
      return "medium-high";
    case Confidence::kMedium:
      return "medium";
    case Confidence::kLowMedium:
      return "low-medium";
    case Confidence::kLow:
      return "low";
  }
  return "low";
}

}  // namespace carve::catalog
