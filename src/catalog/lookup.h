// Lookups over any span of catalog rows. catalog.h applies them to the built-in tables; tests
// apply them to small hand-made tables. Nothing here knows which GPU it reads.
//
// All functions are pure and thread-safe; returned pointers point into the given span. Names are
// matched case-insensitively (ASCII). NotFound messages list what exists.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "catalog/gpu_model.h"
#include "catalog/instance_type.h"
#include "common/result.h"

namespace carve::catalog {

// ASCII case-insensitive equality.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// By canonical id, display name or alias.
Result<const GpuModel*> FindGpuIn(std::span<const GpuModel> gpus, std::string_view name);
Result<const GpuModel*> FindGpuByPciDeviceIdIn(std::span<const GpuModel> gpus,
                                               uint32_t pci_device_id);
// "mig-3g.40gb" or "3g.40gb" on one GPU. NotFound names the GPU and lists its profiles, or says
// the GPU has no MIG.
Result<const MigProfile*> FindProfileIn(const GpuModel& gpu, std::string_view name);
// By id ("ml.p4d.24xlarge"); the "ml." prefix may be left out.
Result<const InstanceType*> FindInstanceTypeIn(std::span<const InstanceType> types,
                                               std::string_view id);

// The suffix spelled at the end of a profile name: "1g.24gb+me.all" -> kMeAll.
ProfileSuffix SuffixOfName(std::string_view profile_name);
// "+me", "-me", "+gfx", "+me.all", or "" for kNone.
std::string_view SuffixText(ProfileSuffix suffix);
// "high", "medium-high", "medium", "low-medium", "low" (the reference's spelling).
std::string_view ConfidenceName(Confidence confidence);

}  // namespace carve::catalog
