// GPU rows for the layout engine's tests, built here so each test states the geometry it relies
// on. Figures follow shared/reference/mig-catalog.md (A100-SXM4-40GB, H100-SXM5-80GB, RTX PRO
// 6000 Blackwell); the real catalog rows are tested in layout_catalog_test.cc.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "catalog/gpu_model.h"

namespace carve::core::test_gpus {

using catalog::DriverVersion;
using catalog::GpuModel;
using catalog::MigProfile;
using catalog::ProfileSuffix;

// Rows are built by these helpers, not by designated initializers, which -Wextra flags when a
// field is left out.
constexpr MigProfile Profile(std::string_view name, int compute, int memory, int max_count,
                             std::span<const uint8_t> starts, int placement_size,
                             DriverVersion min_driver = {},
                             ProfileSuffix suffix = ProfileSuffix::kNone) {
  MigProfile p;
  p.name = name;
  p.compute_slices = compute;
  p.memory_slices = memory;
  p.max_count = max_count;
  p.starts = starts;
  p.placement_size = placement_size;
  p.min_driver = min_driver;
  p.suffix = suffix;
  return p;
}

constexpr GpuModel Gpu(std::string_view id, int compute, int memory, int units, int max_instances,
                       DriverVersion min_driver, std::span<const MigProfile> profiles) {
  GpuModel g;
  g.id = id;
  g.compute_slices = compute;
  g.memory_slices = memory;
  g.placement_units = units;
  g.max_gpu_instances = max_instances;
  g.min_driver = min_driver;
  g.profiles = profiles;
  return g;
}

inline constexpr uint8_t kStarts0to6[] = {0, 1, 2, 3, 4, 5, 6};
inline constexpr uint8_t kStartsEven[] = {0, 2, 4, 6};
inline constexpr uint8_t kStarts024[] = {0, 2, 4};
inline constexpr uint8_t kStarts04[] = {0, 4};
inline constexpr uint8_t kStarts0[] = {0};
inline constexpr uint8_t kStarts0369[] = {0, 3, 6, 9};
inline constexpr uint8_t kStarts06[] = {0, 6};
inline constexpr DriverVersion kAny{};

inline constexpr MigProfile kA100Profiles[] = {
    Profile("1g.5gb", 1, 1, 7, kStarts0to6, 1),
    Profile("1g.5gb+me", 1, 1, 1, kStarts0to6, 1, DriverVersion{470, 0, 0}, ProfileSuffix::kMe),
    Profile("1g.10gb", 1, 2, 4, kStartsEven, 2, DriverVersion{525, 0, 0}),
    Profile("2g.10gb", 2, 2, 3, kStarts024, 2),
    Profile("3g.20gb", 3, 4, 2, kStarts04, 4),
    Profile("4g.20gb", 4, 4, 1, kStarts0, 4),
    Profile("7g.40gb", 7, 8, 1, kStarts0, 8),
};
inline constexpr GpuModel kA100 =
    Gpu("a100-40gb", 7, 8, 8, 7, DriverVersion{450, 80, 2}, kA100Profiles);

inline constexpr MigProfile kH100Profiles[] = {
    Profile("1g.10gb", 1, 1, 7, kStarts0to6, 1),
    Profile("1g.10gb+me", 1, 1, 1, kStarts0to6, 1, kAny, ProfileSuffix::kMe),
    Profile("1g.20gb", 1, 2, 4, kStartsEven, 2),
    Profile("2g.20gb", 2, 2, 3, kStarts024, 2),
    Profile("3g.40gb", 3, 4, 2, kStarts04, 4),
    Profile("4g.40gb", 4, 4, 1, kStarts0, 4),
    Profile("7g.80gb", 7, 8, 1, kStarts0, 8),
};
inline constexpr GpuModel kH100 =
    Gpu("h100-80gb", 7, 8, 8, 7, DriverVersion{525, 85, 12}, kH100Profiles);

inline constexpr MigProfile kRtxProfiles[] = {
    Profile("1g.24gb", 1, 1, 4, kStarts0369, 3),
    Profile("1g.24gb+me.all", 1, 1, 1, kStarts0369, 3, kAny, ProfileSuffix::kMeAll),
    Profile("1g.24gb-me", 1, 1, 4, kStarts0369, 3, kAny, ProfileSuffix::kNoMe),
    Profile("1g.24gb+gfx", 1, 1, 4, kStarts0369, 3, kAny, ProfileSuffix::kGfx),
    Profile("2g.48gb", 2, 2, 2, kStarts06, 6),
    Profile("4g.96gb", 4, 4, 1, kStarts0, 12),
};
inline constexpr GpuModel kRtxPro6000 =
    Gpu("rtx-pro-6000", 4, 4, 12, 4, DriverVersion{575, 51, 3}, kRtxProfiles);

// A GPU without MIG, and one whose profiles have no known placements.
inline constexpr GpuModel kNoMig = Gpu("l4", 0, 0, 0, 0, kAny, {});
inline constexpr MigProfile kUnplacedProfiles[] = {Profile("1g.16gb", 1, 1, 2, {}, 0)};
inline constexpr GpuModel kUnplaced = Gpu("rtx-pro-4500", 2, 2, 0, 2, kAny, kUnplacedProfiles);

}  // namespace carve::core::test_gpus
