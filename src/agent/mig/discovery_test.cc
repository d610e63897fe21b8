#include "agent/mig/discovery.h"

#include <gtest/gtest.h>

#include "agent/nvml/fake_nvml.h"
#include "agent/nvml/nvml_abi.h"

namespace carve::agent {
namespace {

std::unique_ptr<FakeNvml> Node(std::string_view text) {
  auto nvml = FakeNvml::FromText(text);
  EXPECT_TRUE(nvml.has_value()) << nvml.error().message;
  return std::move(nvml).value();
}

const LiveProfile* FindLive(const DiscoveredGpu& gpu, uint32_t id) {
  for (const auto& p : gpu.profiles) {
    if (p.id.value() == id) return &p;
  }
  return nullptr;
}

TEST(Discovery, MapsEveryGpuToItsCatalogModelByPciId) {
  auto nvml = Node("gpus: 8 x a100-40gb, driver: 550.54.15");
  auto node = DiscoverNode(*nvml);
  ASSERT_TRUE(node.has_value()) << node.error().message;
  EXPECT_EQ(node->driver_version, "550.54.15");
  ASSERT_EQ(node->gpus.size(), 8u);
  for (const DiscoveredGpu& gpu : node->gpus) {
    ASSERT_NE(gpu.model, nullptr);
    EXPECT_EQ(gpu.model->id, "a100-40gb");
    EXPECT_TRUE(gpu.mig_capable);
    EXPECT_FALSE(gpu.error.has_value());
  }
  EXPECT_TRUE(node->differences.empty()) << node->differences[0].message;
}

TEST(Discovery, ReadsTheLiveProfileTableAndPlacements) {
  auto nvml = Node("gpus: a100-40gb");
  DiscoveredGpu gpu = DiscoverGpu(*nvml, GpuIndex{0});
  ASSERT_FALSE(gpu.error.has_value());
  EXPECT_EQ(gpu.profiles.size(), 7u);
  const LiveProfile* three = FindLive(gpu, 9);
  ASSERT_NE(three, nullptr);
  ASSERT_TRUE(three->info.has_value());
  EXPECT_EQ(three->info->name, "3g.20gb");
  EXPECT_EQ(three->info->nvml_enum, static_cast<uint32_t>(NVML_GPU_INSTANCE_PROFILE_3_SLICE));
  EXPECT_EQ(three->placements, (std::vector<GiPlacement>{{0, 4}, {4, 4}}));
}

TEST(Discovery, ReportsAPendingModeChange) {
  auto nvml = Node("gpus: a100-40gb, mig: pending-disable");
  DiscoveredGpu gpu = DiscoverGpu(*nvml, GpuIndex{0});
  EXPECT_TRUE(gpu.mig.current_enabled);
  EXPECT_FALSE(gpu.mig.pending_enabled);
  EXPECT_TRUE(gpu.mig.ResetPending());
}

TEST(Discovery, ReadsPlacementsByCatalogIdWhenMigIsOff) {
  auto nvml = Node("gpus: a100-40gb, mig: disabled");
  DiscoveredGpu gpu = DiscoverGpu(*nvml, GpuIndex{0});
  ASSERT_FALSE(gpu.error.has_value());
  EXPECT_FALSE(gpu.mig.current_enabled);
  ASSERT_EQ(gpu.profiles.size(), 7u);
  EXPECT_FALSE(gpu.profiles[0].info.has_value());
  EXPECT_EQ(FindLive(gpu, 0)->placements, (std::vector<GiPlacement>{{0, 8}}));
}

TEST(Discovery, KeepsGoingPastALostGpu) {
  auto nvml = Node("gpus: 3 x a100-40gb, lost: 1");
  auto node = DiscoverNode(*nvml);
  ASSERT_TRUE(node.has_value());
  ASSERT_EQ(node->gpus.size(), 3u);
  ASSERT_TRUE(node->gpus[1].error.has_value());
  EXPECT_NE(node->gpus[1].error->message.find("GPU_IS_LOST"), std::string::npos);
  EXPECT_FALSE(node->gpus[0].error.has_value());
  EXPECT_FALSE(node->gpus[2].error.has_value());
}

TEST(Discovery, ReportsADriverTooOldForMig) {
  auto nvml = Node("gpus: h200-141gb, driver: 535.104.05");
  auto node = DiscoverNode(*nvml);
  ASSERT_TRUE(node.has_value());
  EXPECT_FALSE(node->gpus[0].mig_capable);
  ASSERT_EQ(node->differences.size(), 1u);
  EXPECT_EQ(node->differences[0].kind, DifferenceKind::kDriverTooOld);
  EXPECT_NE(node->differences[0].message.find("535.104.05"), std::string::npos);
}

TEST(Discovery, FailsWhenNvmlIsNotInitialised) {
  auto nvml = Node("gpus: a100-40gb");
  ASSERT_TRUE(nvml->Shutdown().ok());
  auto node = DiscoverNode(*nvml);
  ASSERT_FALSE(node.has_value());
  EXPECT_EQ(node.error().code, ErrorCode::kFailedPrecondition);
}

}  // namespace
}  // namespace carve::agent
