// Lookups over the catalog tables. The tables themselves live in src/catalog/data/.
//
// All functions are pure and thread-safe. Names are matched case-insensitively. Errors are
// NotFound with a message that lists what exists, so a user can correct the name.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "catalog/gpu_model.h"
#include "catalog/instance_type.h"
#include "common/result.h"

namespace carve::catalog {

std::span<const GpuModel> AllGpus();
std::span<const InstanceType> AllInstanceTypes();

// By canonical id ("h100-80gb"), display name, or any alias ("NVIDIA H100 80GB HBM3").
Result<const GpuModel*> FindGpu(std::string_view name);
// By NVML's pciDeviceId (device id in the high 16 bits, vendor 0x10DE in the low).
Result<const GpuModel*> FindGpuByPciDeviceId(uint32_t pci_device_id);

// Resolves a profile name on one GPU; accepts SageMaker's "mig-3g.40gb" and NVML's "3g.40gb".
// The same name can mean different geometry on different GPUs, so there is no global lookup.
Result<const MigProfile*> FindProfile(const GpuModel& gpu, std::string_view name);
// By NVML profile id; nullptr when the GPU has no such profile.
const MigProfile* FindProfileById(const GpuModel& gpu, NvmlProfileId id);
// "mig-3g.40gb": the SageMaker spelling of a profile.
std::string SageMakerName(const MigProfile& profile);
// The one place the two spellings meet: "mig-3g.40gb" (SageMaker's) and "3g.40gb" (NVML's) name
// the same profile. NvmlProfileName drops the "mig-" prefix when there is one;
// SageMakerProfileName adds it when there is none. Neither checks that the profile exists.
std::string_view NvmlProfileName(std::string_view name);
std::string SageMakerProfileName(std::string_view name);

Result<const InstanceType*> FindInstanceType(std::string_view id);

// Prices per instance type id, from a config file, overriding the catalog's.
using PriceOverrides = std::map<std::string, double, std::less<>>;
// The configured price when there is one, else the catalog's (0 = unknown).
double PriceUsdPerHour(const InstanceType& type, const PriceOverrides& overrides);

}  // namespace carve::catalog
