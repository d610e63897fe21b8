// LibNvml through its real dlopen/dlsym path, against the fake libnvidia-ml.so.1.
//
// Each test loads its own copy of the fake (see fake_libnvml_loader.h).
#include "agent/nvml/lib_nvml.h"

#include <gtest/gtest.h>

#include "agent/nvml/fake_libnvml_loader.h"
#include "agent/nvml/nvml_abi.h"

namespace carve::agent {
namespace {

std::unique_ptr<LibNvml> LoadFake(const std::string& config) {
  auto nvml = LoadFakeLibNvml(CARVE_FAKE_LIBNVML_PATH, config);
  EXPECT_TRUE(nvml.has_value()) << nvml.error().message;
  return nvml.has_value() ? std::move(nvml).value() : nullptr;
}

TEST(LibNvml, DiscoversAnEightGpuA100NodeThroughDlopen) {
  auto nvml = LoadFake("gpus: 8 x a100-40gb, driver 550.54.15, mig: enabled");
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(*nvml->DriverVersion(), "550.54.15");
  ASSERT_EQ(*nvml->DeviceCount(), 8u);
  auto info = nvml->DeviceInfo(GpuIndex{7});
  ASSERT_TRUE(info.has_value()) << info.error().message;
  EXPECT_EQ(info->pci_device_id, 0x20B010DEu);
  EXPECT_EQ(info->name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(info->pci_bus_id, "00000000:17:00.0");
  EXPECT_GT(info->memory_total_mib, 39000u);
  EXPECT_EQ(*nvml->GetMigMode(GpuIndex{7}), (MigMode{true, true}));
}

TEST(LibNvml, ReadsTheVersionedProfileInfoAndPlacements) {
  auto nvml = LoadFake("gpus: h200-141gb, driver: 560.35.03");
  ASSERT_NE(nvml, nullptr);
  auto p = nvml->GetGpuInstanceProfile(GpuIndex{0}, NVML_GPU_INSTANCE_PROFILE_3_SLICE);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  ASSERT_TRUE(p->has_value());
  EXPECT_EQ((*p)->id, NvmlProfileId{9});
  EXPECT_EQ((*p)->name, "3g.71gb");
  EXPECT_EQ((*p)->slice_count, 3u);
  EXPECT_EQ((*p)->instance_count, 2u);
  EXPECT_EQ((*p)->memory_mib, 71168u);
  auto placements = nvml->PossiblePlacements(GpuIndex{0}, NvmlProfileId{9});
  ASSERT_TRUE(placements.has_value()) << placements.error().message;
  EXPECT_EQ(*placements, (std::vector<GiPlacement>{{0, 4}, {4, 4}}));
}

TEST(LibNvml, AnAbsentProfileIsNulloptNotAnError) {
  auto nvml = LoadFake("gpus: a100-40gb");
  ASSERT_NE(nvml, nullptr);
  auto p = nvml->GetGpuInstanceProfile(GpuIndex{0}, NVML_GPU_INSTANCE_PROFILE_6_SLICE);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_FALSE(p->has_value());
}

TEST(LibNvml, CarvesListsAndTearsDownThroughTheCAbi) {
  auto nvml = LoadFake("gpus: a100-40gb");
  ASSERT_NE(nvml, nullptr);
  const GpuIndex gpu{0};
  auto gi = nvml->CreateGpuInstance(gpu, NvmlProfileId{9}, {4, 4});
  ASSERT_TRUE(gi.has_value()) << gi.error().message;
  auto ci = nvml->CreateFullComputeInstance(gpu, *gi);
  ASSERT_TRUE(ci.has_value()) << ci.error().message;
  auto gis = nvml->ListGpuInstances(gpu);
  ASSERT_TRUE(gis.has_value()) << gis.error().message;
  ASSERT_EQ(gis->size(), 1u);
  EXPECT_EQ((*gis)[0].placement, (GiPlacement{4, 4}));
  ASSERT_EQ((*gis)[0].compute_instances.size(), 1u);
  EXPECT_EQ((*gis)[0].compute_instances[0].slice_count, 3u);
  auto migs = nvml->ListMigDevices(gpu);
  ASSERT_TRUE(migs.has_value()) << migs.error().message;
  ASSERT_EQ(migs->size(), 1u);
  EXPECT_EQ((*migs)[0].uuid.rfind("MIG-", 0), 0u);
  ASSERT_TRUE(nvml->DestroyComputeInstance(gpu, *gi, *ci).ok());
  ASSERT_TRUE(nvml->DestroyGpuInstance(gpu, *gi).ok());
  EXPECT_TRUE(nvml->ListGpuInstances(gpu)->empty());
  EXPECT_TRUE(nvml->ListMigDevices(gpu)->empty());
}

TEST(LibNvml, ReadsProcessesPastTheFirstBuffer) {
  std::string config = "gpus: a100-40gb";
  for (int pid = 100; pid < 140; ++pid) config += ", process: pid=" + std::to_string(pid);
  auto nvml = LoadFake(config);
  ASSERT_NE(nvml, nullptr);
  auto procs = nvml->ComputeProcesses(GpuIndex{0});
  ASSERT_TRUE(procs.has_value()) << procs.error().message;
  ASSERT_EQ(procs->size(), 40u);
  EXPECT_EQ(procs->back().pid, 139u);
}

TEST(LibNvml, ALostDeviceIsUnavailableNamingTheCall) {
  auto nvml = LoadFake("gpus: 2 x a100-40gb, lost: 1");
  ASSERT_NE(nvml, nullptr);
  auto info = nvml->DeviceInfo(GpuIndex{1});
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(info.error().message.find("nvmlDeviceGetUUID(gpu 1)"), std::string::npos)
      << info.error().message;
  EXPECT_NE(info.error().message.find("NVML_ERROR_GPU_IS_LOST"), std::string::npos);
  EXPECT_TRUE(nvml->DeviceInfo(GpuIndex{0}).has_value());
}

TEST(LibNvml, AMissingLibraryIsNotFound) {
  auto nvml = LibNvml::Load("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(nvml.has_value());
  EXPECT_EQ(nvml.error().code, ErrorCode::kNotFound);
  EXPECT_NE(nvml.error().message.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

TEST(LibNvml, ALibraryWithoutNvmlSymbolsNamesTheMissingOnes) {
  auto nvml = LibNvml::Load("libm.so.6");
  ASSERT_FALSE(nvml.has_value());
  EXPECT_EQ(nvml.error().code, ErrorCode::kUnimplemented);
  EXPECT_NE(nvml.error().message.find("nvmlInit_v2"), std::string::npos);
  EXPECT_NE(nvml.error().message.find("nvmlDeviceGetGpuInstancePossiblePlacements_v2"),
            std::string::npos);
}

}  // namespace
}  // namespace carve::agent
