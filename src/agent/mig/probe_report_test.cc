#include "agent/mig/probe_report.h"

#include <gtest/gtest.h>

#include "agent/nvml/fake_nvml.h"
#include "agent/nvml/read_only_nvml.h"

namespace carve::agent {
namespace {

TEST(ProbeReport, ListsGpusProfilesAndPlacements) {
  auto nvml = FakeNvml::FromText("gpus: 2 x a100-40gb");
  ASSERT_TRUE(nvml.has_value());
  auto node = DiscoverNode(**nvml);
  ASSERT_TRUE(node.has_value());
  nlohmann::json j = ProbeReport(*node);
  EXPECT_EQ(j["status"], "ok");
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][1]["catalog_model"], "a100-40gb");
  EXPECT_EQ(j["gpus"][1]["pci_device_id"], "0x20b010de");
  EXPECT_EQ(j["gpus"][0]["profiles"].size(), 7u);
  EXPECT_EQ(j["gpus"][0]["profiles"][0]["source"], "profile-table");
  EXPECT_EQ(j["summary"]["differences"], 0);
}

TEST(ProbeReport, CountsPlacementDifferences) {
  NodeInventory node;
  node.differences.push_back(CatalogDifference{GpuIndex{0}, DifferenceKind::kPlacements, "3g.71gb",
                                               "{0,4}:4", "{0,4}:3", "differs"});
  nlohmann::json j = ProbeReport(node);
  EXPECT_EQ(j["summary"]["placement_differences"], 1);
  EXPECT_EQ(j["differences"][0]["kind"], "placements");
}

TEST(ReadOnlyNvml, RefusesEveryChangeAndForwardsReads) {
  auto fake = FakeNvml::FromText("gpus: a100-40gb");
  ASSERT_TRUE(fake.has_value());
  ReadOnlyNvml nvml(**fake);
  EXPECT_EQ(*nvml.DeviceCount(), 1u);
  auto gi = nvml.CreateGpuInstance(GpuIndex{0}, NvmlProfileId{0}, {0, 8});
  ASSERT_FALSE(gi.has_value());
  EXPECT_EQ(gi.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_FALSE(nvml.CreateFullComputeInstance(GpuIndex{0}, GpuInstanceId{1}).has_value());
  EXPECT_FALSE(nvml.DestroyGpuInstance(GpuIndex{0}, GpuInstanceId{1}).ok());
  EXPECT_FALSE(nvml.DestroyComputeInstance(GpuIndex{0}, GpuInstanceId{1}, {}).ok());
  EXPECT_EQ((*fake)->core().gpu_instance_create_calls(), 0);
  EXPECT_TRUE((*fake)->core().journal().empty());
}

}  // namespace
}  // namespace carve::agent
