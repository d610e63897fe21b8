// FakeNvml must behave as MIG does, or every test above it proves nothing.
#include "agent/nvml/fake_nvml.h"

#include <gtest/gtest.h>

#include "agent/nvml/nvml_abi.h"

namespace carve::agent {
namespace {

constexpr GpuIndex kGpu0{0};
// A100-40GB profile ids (MIG user guide): 1g.5gb 19, 1g.5gb+me 20, 3g.20gb 9, 4g.20gb 5, 7g 0.
constexpr NvmlProfileId k1g5gb{19};
constexpr NvmlProfileId k1g5gbMe{20};
constexpr NvmlProfileId k3g20gb{9};
constexpr NvmlProfileId k7g40gb{0};

std::unique_ptr<FakeNvml> Node(std::string_view text) {
  auto nvml = FakeNvml::FromText(text);
  EXPECT_TRUE(nvml.has_value()) << nvml.error().message;
  return std::move(nvml).value();
}

TEST(FakeNvml, ReportsCatalogDeviceFacts) {
  auto nvml = Node("gpus: 2 x a100-40gb");
  auto info = nvml->DeviceInfo(GpuIndex{1});
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->pci_device_id, 0x20B010DEu);
  EXPECT_EQ(info->name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(info->uuid.rfind("GPU-", 0), 0u);
  EXPECT_NE(info->uuid, nvml->DeviceInfo(kGpu0)->uuid);
}

TEST(FakeNvml, PlacementsAreTheProfileStarts) {
  auto nvml = Node("gpus: a100-40gb");
  auto p = nvml->PossiblePlacements(kGpu0, k3g20gb);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, (std::vector<GiPlacement>{{0, 4}, {4, 4}}));
}

TEST(FakeNvml, RefusesAnOverlappingInstance) {
  auto nvml = Node("gpus: a100-40gb");
  ASSERT_TRUE(nvml->CreateGpuInstance(kGpu0, k3g20gb, {0, 4}).has_value());
  auto second = nvml->CreateGpuInstance(kGpu0, k1g5gb, {2, 1});
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(second.error().message.find("INSUFFICIENT_RESOURCES"), std::string::npos);
  EXPECT_EQ(nvml->ListGpuInstances(kGpu0)->size(), 1u);
}

TEST(FakeNvml, RefusesAStartThatIsNotAPlacement) {
  auto nvml = Node("gpus: a100-40gb");
  auto gi = nvml->CreateGpuInstance(kGpu0, k3g20gb, {2, 4});
  ASSERT_FALSE(gi.has_value());
  EXPECT_EQ(gi.error().code, ErrorCode::kInvalidArgument);
}

TEST(FakeNvml, EnforcesThePerProfileCap) {
  auto nvml = Node("gpus: a100-40gb");
  // 7g.40gb has max_count 1 and covers the GPU, so a second one fails on both counts; use the
  // 1g.5gb+me cap instead (1 per GPU) with disjoint placements.
  ASSERT_TRUE(nvml->CreateGpuInstance(kGpu0, k1g5gbMe, {0, 1}).has_value());
  auto second = nvml->CreateGpuInstance(kGpu0, k1g5gbMe, {3, 1});
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, ErrorCode::kResourceExhausted);
}

TEST(FakeNvml, AllowsSevenOneSliceInstancesAndNoEighth) {
  auto nvml = Node("gpus: a100-40gb");
  for (uint32_t s = 0; s < 7; ++s) {
    ASSERT_TRUE(nvml->CreateGpuInstance(kGpu0, k1g5gb, {s, 1}).has_value()) << s;
  }
  EXPECT_FALSE(nvml->CreateGpuInstance(kGpu0, k1g5gb, {7, 1}).has_value());
}

TEST(FakeNvml, CreatesAFullSizeComputeInstanceWithAMigUuid) {
  auto nvml = Node("gpus: a100-40gb");
  auto gi = nvml->CreateGpuInstance(kGpu0, k3g20gb, {4, 4});
  ASSERT_TRUE(gi.has_value());
  auto ci = nvml->CreateFullComputeInstance(kGpu0, *gi);
  ASSERT_TRUE(ci.has_value()) << ci.error().message;
  auto gis = nvml->ListGpuInstances(kGpu0);
  ASSERT_EQ(gis->size(), 1u);
  ASSERT_EQ((*gis)[0].compute_instances.size(), 1u);
  EXPECT_EQ((*gis)[0].compute_instances[0].slice_count, 3u);
  auto migs = nvml->ListMigDevices(kGpu0);
  ASSERT_EQ(migs->size(), 1u);
  EXPECT_EQ((*migs)[0].gpu_instance, *gi);
  EXPECT_EQ((*migs)[0].uuid.rfind("MIG-", 0), 0u);
}

TEST(FakeNvml, DestroyingAGpuInstanceWithComputeInstancesIsInUse) {
  auto nvml = Node("gpus: a100-40gb");
  auto gi = nvml->CreateGpuInstance(kGpu0, k7g40gb, {0, 8});
  ASSERT_TRUE(nvml->CreateFullComputeInstance(kGpu0, *gi).has_value());
  Status s = nvml->DestroyGpuInstance(kGpu0, *gi);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
}

TEST(FakeNvml, MigModeChangeStaysPendingUntilReset) {
  auto nvml = Node("gpus: a100-40gb, mig: disabled");
  nvml->core().SetMigMode(0, true);
  EXPECT_EQ(*nvml->GetMigMode(kGpu0), (MigMode{false, true}));
  EXPECT_FALSE(nvml->CreateGpuInstance(kGpu0, k7g40gb, {0, 8}).has_value());
  nvml->core().SimulateReset(0);
  EXPECT_EQ(*nvml->GetMigMode(kGpu0), (MigMode{true, true}));
  EXPECT_TRUE(nvml->CreateGpuInstance(kGpu0, k7g40gb, {0, 8}).has_value());
}

TEST(FakeNvml, FailsTheNthCreate) {
  auto nvml = Node("gpus: a100-40gb");
  nvml->core().FailNthCreate(2);
  EXPECT_TRUE(nvml->CreateGpuInstance(kGpu0, k1g5gb, {0, 1}).has_value());
  EXPECT_FALSE(nvml->CreateGpuInstance(kGpu0, k1g5gb, {1, 1}).has_value());
  EXPECT_TRUE(nvml->CreateGpuInstance(kGpu0, k1g5gb, {1, 1}).has_value());
}

TEST(FakeNvml, ALostGpuAnswersGpuIsLost) {
  auto nvml = Node("gpus: 2 x a100-40gb, lost: 1");
  auto mode = nvml->GetMigMode(GpuIndex{1});
  ASSERT_FALSE(mode.has_value());
  EXPECT_EQ(mode.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(mode.error().message.find("NVML_ERROR_GPU_IS_LOST"), std::string::npos);
  EXPECT_TRUE(nvml->GetMigMode(kGpu0).has_value());
}

TEST(FakeNvml, ADriverBelowTheGpuMinimumHidesMig) {
  auto nvml = Node("gpus: h100-80gb, driver: 470.82.01");
  auto mode = nvml->GetMigMode(kGpu0);
  ASSERT_FALSE(mode.has_value());
  EXPECT_EQ(mode.error().code, ErrorCode::kUnimplemented);
}

TEST(FakeNvml, AProfileNewerThanTheDriverIsAbsent) {
  // A100-40GB 1g.10gb (enum 1_SLICE_REV2) needs R525; R470 has the rest of the table.
  auto nvml = Node("gpus: a100-40gb, driver: 470.82.01");
  EXPECT_FALSE(
      nvml->GetGpuInstanceProfile(kGpu0, NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2)->has_value());
  EXPECT_TRUE(nvml->GetGpuInstanceProfile(kGpu0, NVML_GPU_INSTANCE_PROFILE_1_SLICE)->has_value());
}

TEST(FakeNvml, ReportsProcessesWithTheirMigInstance) {
  auto nvml = Node("gpus: a100-40gb, process: pid=77 gpu=0 mib=300");
  nvml->core().AddProcess(0, 78, 100, 1, 0);
  auto procs = nvml->ComputeProcesses(kGpu0);
  ASSERT_EQ(procs->size(), 2u);
  EXPECT_EQ((*procs)[0].pid, 77u);
  EXPECT_FALSE((*procs)[0].gpu_instance.has_value());
  EXPECT_EQ((*procs)[1].gpu_instance, GpuInstanceId{1});
  EXPECT_EQ(nvml->DeviceInfo(kGpu0)->memory_used_mib, 400u);
}

TEST(FakeNvml, ReportsTheUtilizationItWasGiven) {
  auto nvml = Node("gpus: 2 x a100-40gb");
  nvml->core().SetUtilization(1, 87, 40);
  auto u = nvml->Utilization(GpuIndex{1});
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->gpu_percent, 87u);
  EXPECT_EQ(u->memory_percent, 40u);
  EXPECT_EQ(nvml->Utilization(kGpu0)->gpu_percent, 0u);
}

}  // namespace
}  // namespace carve::agent
