// The catalog.h lookups, applied to the built-in tables of src/catalog/data/.
#include "catalog/catalog.h"

#include <vector>

#include "catalog/data/tables.h"
#include "catalog/lookup.h"

namespace carve::catalog {
namespace {

// The family tables concatenated once, in a fixed order (thread-safe static initialisation).
const std::vector<GpuModel>& GpuTable() {
  static const std::vector<GpuModel> table = [] {
    std::vector<GpuModel> all;
    for (auto family : {data::AmpereGpus(), data::HopperGpus(), data::BlackwellGpus(),
                        data::RtxProGpus(), data::WholeGpus()}) {
      all.insert(all.end(), family.begin(), family.end());
    }
    return all;
  }();
  return table;
}

}  // namespace

std::span<const GpuModel> AllGpus() { return GpuTable(); }
std::span<const InstanceType> AllInstanceTypes() { return data::InstanceTypes(); }

Result<const GpuModel*> FindGpu(std::string_view name) { return FindGpuIn(AllGpus(), name); }

Result<const GpuModel*> FindGpuByPciDeviceId(uint32_t pci_device_id) {
  return FindGpuByPciDeviceIdIn(AllGpus(), pci_device_id);
}

Result<const MigProfile*> FindProfile(const GpuModel& gpu, std::string_view name) {
  return FindProfileIn(gpu, name);
}

const MigProfile* FindProfileById(const GpuModel& gpu, NvmlProfileId id) {
  for (const MigProfile& p : gpu.profiles) {
    if (p.id == id) {
      return &p;
    }
  }
  return nullptr;
}

std::string SageMakerName(const MigProfile& profile) { return SageMakerProfileName(profile.name); }

namespace {
constexpr std::string_view kSageMakerProfilePrefix = "mig-";
}  // namespace

std::string_view NvmlProfileName(std::string_view name) {
  return name.starts_with(kSageMakerProfilePrefix) ? name.substr(kSageMakerProfilePrefix.size())
                                                   : name;
}

std::string SageMakerProfileName(std::string_view name) {
  return name.starts_with(kSageMakerProfilePrefix)
             ? std::string(name)
             : std::string(kSageMakerProfilePrefix) + std::string(name);
}

Result<const InstanceType*> FindInstanceType(std::string_view id) {
  return FindInstanceTypeIn(AllInstanceTypes(), id);
}

double PriceUsdPerHour(const InstanceType& type, const PriceOverrides& overrides) {
  auto it = overrides.find(type.id);
  return it != overrides.end() ? it->second : type.usd_per_hour;
}

}  // namespace carve::catalog
