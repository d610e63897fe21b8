// The catalog's row types: a GPU model and its MIG GPU-instance profiles.
//
// Rows are constexpr data (src/catalog/data/), one file per GPU family; this header holds no
// logic beyond trivial accessors. Every figure's provenance is in the row's sources and
// confidence, taken from shared/reference/mig-catalog.json.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "catalog/driver_version.h"
#include "common/ids.h"

namespace carve::catalog {

// How close a figure is to what NVML reports on real hardware (see mig-catalog.json
// "conventions.confidence").
enum class Confidence {
  kHigh,        // Real `nvidia-smi mig -lgipp` output or an NVIDIA document.
  kMediumHigh,  // Same silicon and ids as a high row; a detail (SMs, memory) not seen.
  kMedium,      // Inferred from identical profile-id / instance-count structure.
  kLowMedium,   // Names and counts only, geometry inferred.
  kLow,         // Names only.
};

// The part of a profile name after the size, e.g. "1g.10gb+me".
enum class ProfileSuffix {
  kNone,
  kMe,     // "+me": includes the media engines; at most one per GPU.
  kNoMe,   // "-me": excludes media engines (RTX PRO).
  kGfx,    // "+gfx": graphics-capable (RTX PRO).
  kMeAll,  // "+me.all": takes all media engines; only -me profiles may sit beside it.
};

struct MigProfile {
  std::string_view name;      // NVML spelling: "3g.40gb", "1g.10gb+me".
  NvmlProfileId id;           // nvmlGpuInstanceProfileInfo_t.id (what -lgip prints).
  uint32_t nvml_enum = 0;     // NVML_GPU_INSTANCE_PROFILE_* passed to ...GetGpuInstanceProfileInfo.
  int compute_slices = 0;
  int memory_slices = 0;
  int64_t memory_mib = 0;     // As NVML reports it (varies a little by driver); see note when
                              // inferred (confidence is then lowered).
  int sms = 0;                // nvmlGpuInstanceProfileInfo_t.multiprocessorCount; 0 = not known.
  int max_count = 0;          // Per-GPU cap for this profile ("Instances Total").
  std::span<const uint8_t> starts;  // Allowed placement starts, in placement units.
  int placement_size = 0;     // Placement units one instance occupies.
  DriverVersion min_driver;   // Unset when the GPU's own minimum applies.
  ProfileSuffix suffix = ProfileSuffix::kNone;
  Confidence confidence = Confidence::kHigh;
  std::string_view note;      // Provenance or caveat, empty when none.
};

struct GpuModel {
  std::string_view id;            // Canonical carve id: "a100-40gb".
  std::string_view display_name;  // "A100-SXM4-40GB".
  std::span<const std::string_view> aliases;  // Includes NVML product names.
  std::span<const uint32_t> pci_device_ids;   // nvmlPciInfo_t.pciDeviceId, e.g. 0x20B010DE.
  std::string_view architecture;
  int sms = 0;                // 0 = not known (see notes).
  int64_t memory_mib = 0;
  int bandwidth_gbps = 0;     // GB/s, decimal; 0 = not known.
  double bf16_tflops = 0;     // Dense; 0 = not known or no BF16 (see notes).
  double fp8_tflops = 0;      // Dense; 0 where the GPU has no FP8 or the figure is not known.
  int compute_slices = 0;     // 0 for GPUs without MIG.
  int memory_slices = 0;
  int placement_units = 0;
  int max_gpu_instances = 0;
  DriverVersion min_driver;   // Minimum driver for MIG on this GPU.
  Confidence placement_confidence = Confidence::kHigh;
  std::span<const MigProfile> profiles;  // Empty for GPUs without MIG.
  std::span<const std::string_view> sources;
  // Added after the first contract (additive): caveats on the row, e.g. figures inferred or
  // profiles left out because the reference lacks their geometry.
  std::string_view notes;
  // True when the silicon has FP8 tensor cores even where fp8_tflops is not known (0).
  bool fp8_supported = false;
  std::string_view compute_capability;  // "9.0".

  constexpr bool mig_capable() const { return !profiles.empty(); }
  constexpr bool has_fp8() const { return fp8_supported || fp8_tflops > 0; }
};

}  // namespace carve::catalog
