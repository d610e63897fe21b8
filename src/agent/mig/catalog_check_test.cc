#include "agent/mig/catalog_check.h"

#include <gtest/gtest.h>

#include "agent/mig/discovery.h"
#include "catalog/catalog.h"

namespace carve::agent {
namespace {

const catalog::DriverVersion kDriver{560, 35, 3};

// A GPU whose live table is exactly the catalog row: the cross-check's zero point.
DiscoveredGpu LiveCopyOf(std::string_view gpu_name) {
  const catalog::GpuModel* model = *catalog::FindGpu(gpu_name);
  DiscoveredGpu gpu;
  gpu.index = GpuIndex{0};
  gpu.device.name = "NVIDIA " + std::string(model->display_name);
  gpu.device.pci_device_id = model->pci_device_ids.front();
  gpu.mig_capable = true;
  gpu.mig = MigMode{true, true};
  gpu.model = model;
  for (const catalog::MigProfile& p : model->profiles) {
    GpuInstanceProfileInfo info;
    info.nvml_enum = p.nvml_enum;
    info.id = p.id;
    info.name = std::string(p.name);
    info.slice_count = static_cast<uint32_t>(p.compute_slices);
    info.instance_count = static_cast<uint32_t>(p.max_count);
    info.multiprocessor_count = static_cast<uint32_t>(p.sms);
    info.memory_mib = static_cast<uint64_t>(p.memory_mib);
    LiveProfile live{p.id, info, {}};
    for (uint8_t s : p.starts) {
      live.placements.push_back(GiPlacement{s, static_cast<uint32_t>(p.placement_size)});
    }
    gpu.profiles.push_back(std::move(live));
  }
  return gpu;
}

LiveProfile& Live(DiscoveredGpu& gpu, uint32_t id) {
  for (auto& p : gpu.profiles) {
    if (p.id.value() == id) return p;
  }
  ADD_FAILURE() << "no profile " << id;
  return gpu.profiles.front();
}

TEST(CatalogCheck, FindsNothingWhenLiveMatchesTheCatalog) {
  for (std::string_view name : {"a30-24gb", "a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb"}) {
    auto diffs = CrossCheck(LiveCopyOf(name), kDriver);
    EXPECT_TRUE(diffs.empty()) << name << ": " << diffs[0].message;
  }
}

TEST(CatalogCheck, ReportsDifferentPlacementsInLgippSpelling) {
  DiscoveredGpu gpu = LiveCopyOf("h200-141gb");
  // What the go-nvml mock claims for Hopper 3g; real dumps say {0,4}:4.
  Live(gpu, 9).placements = {{0, 3}, {4, 3}};
  auto diffs = CrossCheck(gpu, kDriver);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::kPlacements);
  EXPECT_EQ(diffs[0].profile, "3g.71gb");
  EXPECT_EQ(diffs[0].catalog_value, "{0,4}:4");
  EXPECT_EQ(diffs[0].live_value, "{0,4}:3");
}

TEST(CatalogCheck, ReportsARenamedProfileAndItsMemory) {
  DiscoveredGpu gpu = LiveCopyOf("a100-80gb");
  Live(gpu, 0).info->name = "7g.79gb";
  Live(gpu, 0).info->memory_mib = 80000;
  auto diffs = CrossCheck(gpu, kDriver);
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::kName);
  EXPECT_EQ(diffs[0].live_value, "7g.79gb");
  EXPECT_EQ(diffs[1].kind, DifferenceKind::kMemory);
  EXPECT_EQ(diffs[1].live_value, "80000");
}

TEST(CatalogCheck, ReportsSmAndInstanceCountDifferences) {
  DiscoveredGpu gpu = LiveCopyOf("h100-80gb");
  Live(gpu, 9).info->multiprocessor_count = 48;
  Live(gpu, 19).info->instance_count = 6;
  auto diffs = CrossCheck(gpu, kDriver);
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::kInstanceCount);  // Profile 19 comes first.
  EXPECT_EQ(diffs[1].kind, DifferenceKind::kSms);
  EXPECT_NE(diffs[1].message.find("catalog 60 SMs, NVML 48 SMs"), std::string::npos)
      << diffs[1].message;
}

TEST(CatalogCheck, ReportsAProfileTheCatalogLacks) {
  DiscoveredGpu gpu = LiveCopyOf("a100-40gb");
  GpuInstanceProfileInfo extra;
  extra.id = NvmlProfileId{42};
  extra.name = "2g.10gb+me";
  gpu.profiles.push_back(LiveProfile{extra.id, extra, {{0, 2}}});
  auto diffs = CrossCheck(gpu, kDriver);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::kMissingCatalog);
  EXPECT_NE(diffs[0].message.find("profile id 42 (2g.10gb+me)"), std::string::npos);
}

TEST(CatalogCheck, ReportsACatalogProfileMissingFromTheLiveTable) {
  DiscoveredGpu gpu = LiveCopyOf("a100-40gb");
  gpu.profiles.erase(gpu.profiles.begin());  // 1g.5gb
  auto diffs = CrossCheck(gpu, kDriver);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::kMissingLive);
  EXPECT_EQ(diffs[0].profile, "1g.5gb");
}

TEST(CatalogCheck, ExpectsProfilesNewerThanTheDriverToBeAbsent) {
  DiscoveredGpu gpu = LiveCopyOf("a100-40gb");
  // 1g.10gb (id 15) needs R525; on R470 its absence is not a difference.
  std::erase_if(gpu.profiles, [](const LiveProfile& p) { return p.id.value() == 15; });
  EXPECT_TRUE(CrossCheck(gpu, catalog::DriverVersion{470, 82, 1}).empty());
  EXPECT_EQ(CrossCheck(gpu, kDriver).size(), 1u);
}

TEST(CatalogCheck, ReportsAnUnknownGpuByPciId) {
  DiscoveredGpu gpu;
  gpu.index = GpuIndex{3};
  gpu.device.name = "NVIDIA Z9000";
  gpu.device.pci_device_id = 0x999910DE;
  auto diffs = CrossCheck(gpu, kDriver);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::kUnknownGpu);
  EXPECT_EQ(diffs[0].gpu, GpuIndex{3});
  EXPECT_NE(diffs[0].message.find("0x999910de"), std::string::npos) << diffs[0].message;
}

TEST(CatalogCheck, ReportsMigSupportTheCatalogDoesNotExpect) {
  DiscoveredGpu gpu = LiveCopyOf("a100-40gb");
  gpu.mig_capable = false;
  gpu.profiles.clear();
  auto diffs = CrossCheck(gpu, kDriver);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::kMigSupport);
}

TEST(CatalogCheck, ChecksPlacementsReadByCatalogIdWithoutATable) {
  DiscoveredGpu gpu = LiveCopyOf("a100-40gb");
  for (auto& p : gpu.profiles) p.info.reset();
  Live(gpu, 14).placements = {{0, 2}, {2, 2}};
  auto diffs = CrossCheck(gpu, kDriver);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].kind, DifferenceKind::kPlacements);
  EXPECT_EQ(diffs[0].catalog_value, "{0,2,4}:2");
}

}  // namespace
}  // namespace carve::agent
