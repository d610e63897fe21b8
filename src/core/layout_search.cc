#include "core/layout_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <functional>

#include "catalog/catalog.h"

namespace carve::core {
namespace {

using catalog::GpuModel;
using catalog::MigProfile;

constexpr int kMaxUnits = 64;

struct Search {
  uint64_t all_units;
  std::vector<const MigProfile*> items;  // In placement order.
  std::vector<int> remaining_units;      // remaining_units[i]: units items[i..] need in total.
  std::vector<PlacedInstance> placed;

  bool Place(size_t i, uint64_t occupied) {
    if (i == items.size()) {
      return true;
    }
    const int free_units = std::popcount(all_units & ~occupied);
    if (remaining_units[i] > free_units) {
      return false;
    }
    const MigProfile& p = *items[i];
    // Copies of one profile take increasing starts: the other orders are the same layout.
    const int min_start = (i > 0 && items[i - 1] == items[i]) ? placed[i - 1].start + 1 : 0;
    for (uint8_t start : p.starts) {
      if (start < min_start || !StartFree(p, start, occupied)) {
        continue;
      }
      placed[i] = PlacedInstance{&p, start};
      if (Place(i + 1, occupied | UnitMask(start, p.placement_size))) {
        return true;
      }
    }
    return false;
  }
};

}  // namespace

bool HasPlacementGeometry(const GpuModel& gpu) {
  if (gpu.placement_units <= 0 || gpu.placement_units > kMaxUnits) {
    return false;
  }
  for (const MigProfile& p : gpu.profiles) {
    if (p.placement_size <= 0 || p.starts.empty()) {
      return false;
    }
    for (uint8_t start : p.starts) {
      if (start + p.placement_size > gpu.placement_units) {
        return false;
      }
    }
  }
  return true;
}

uint64_t UnitMask(int start, int size) {
  if (size <= 0) {
    return 0;
  }
  const uint64_t ones = size >= kMaxUnits ? ~uint64_t{0} : ((uint64_t{1} << size) - 1);
  return ones << start;
}

uint64_t OccupiedUnits(std::span<const PlacedInstance> instances) {
  uint64_t occupied = 0;
  for (const PlacedInstance& inst : instances) {
    occupied |= UnitMask(inst.start, inst.profile->placement_size);
  }
  return occupied;
}

bool StartFree(const MigProfile& profile, int start, uint64_t occupied) {
  if (std::find(profile.starts.begin(), profile.starts.end(), start) == profile.starts.end()) {
    return false;
  }
  return (occupied & UnitMask(start, profile.placement_size)) == 0;
}

std::optional<std::vector<PlacedInstance>> FindPlacement(
    const GpuModel& gpu, uint64_t occupied, std::span<const MigProfile* const> additions) {
  Search search;
  search.all_units = UnitMask(0, gpu.placement_units);
  search.items.assign(additions.begin(), additions.end());
  std::stable_sort(search.items.begin(), search.items.end(),
                   [](const MigProfile* a, const MigProfile* b) {
                     if (a->placement_size != b->placement_size) {
                       return a->placement_size > b->placement_size;
                     }
                     if (a->starts.size() != b->starts.size()) {
                       return a->starts.size() < b->starts.size();
                     }
                     return std::less<const MigProfile*>{}(a, b);  // Catalog order.
                   });
  search.remaining_units.assign(search.items.size() + 1, 0);
  for (size_t i = search.items.size(); i-- > 0;) {
    search.remaining_units[i] = search.remaining_units[i + 1] + search.items[i]->placement_size;
  }
  search.placed.resize(search.items.size());
  if (!search.Place(0, occupied)) {
    return std::nullopt;
  }
  SortForCreation(search.placed);
  return std::move(search.placed);
}

std::string PlacementsText(const MigProfile& profile) {
  std::string starts;
  for (uint8_t s : profile.starts) {
    starts += fmt::format("{}{}", starts.empty() ? "" : ",", s);
  }
  return fmt::format("{} starts at {{{}}} size {}", catalog::SageMakerName(profile), starts,
                     profile.placement_size);
}

std::string PlacementsText(std::span<const MigProfile* const> profiles) {
  std::string out;
  std::vector<const MigProfile*> seen;
  for (const MigProfile* p : profiles) {
    if (std::find(seen.begin(), seen.end(), p) != seen.end()) {
      continue;
    }
    seen.push_back(p);
    if (!out.empty()) {
      out += "; ";
    }
    out += PlacementsText(*p);
  }
  return out;
}

void SortForCreation(std::vector<PlacedInstance>& instances) {
  std::stable_sort(instances.begin(), instances.end(),
                   [](const PlacedInstance& a, const PlacedInstance& b) {
                     if (a.profile->placement_size != b.profile->placement_size) {
                       return a.profile->placement_size > b.profile->placement_size;
                     }
                     return a.start < b.start;
                   });
}

}  // namespace carve::core
