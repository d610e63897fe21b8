// Lookups over the built-in catalog, checked against figures from the reference.
#include "catalog/catalog.h"

#include <gtest/gtest.h>

#include <vector>

namespace carve::catalog {
namespace {

const GpuModel& Gpu(std::string_view name) {
  auto gpu = FindGpu(name);
  EXPECT_TRUE(gpu) << gpu.error().message;
  return **gpu;
}

std::vector<int> Starts(const MigProfile& p) { return {p.starts.begin(), p.starts.end()}; }

TEST(Catalog, FindsGpusByIdDisplayNameAndNvmlNameIgnoringCase) {
  EXPECT_EQ(Gpu("h100-80gb").id, "h100-80gb");
  EXPECT_EQ(Gpu("H100-80GB").id, "h100-80gb");
  EXPECT_EQ(Gpu("NVIDIA H100 80GB HBM3").id, "h100-80gb");
  EXPECT_EQ(Gpu("nvidia a100-sxm4-40gb").id, "a100-40gb");
  EXPECT_EQ(Gpu("A100-SXM4-40GB").id, "a100-40gb");
  EXPECT_EQ(Gpu("Tesla T4").id, "t4");
}

TEST(Catalog, AProfileHasASageMakerAndAnNvmlSpellingAndEachComesBack) {
  EXPECT_EQ(NvmlProfileName("mig-3g.40gb"), "3g.40gb");
  EXPECT_EQ(NvmlProfileName("3g.40gb"), "3g.40gb");
  EXPECT_EQ(SageMakerProfileName("3g.40gb"), "mig-3g.40gb");
  EXPECT_EQ(SageMakerProfileName("mig-3g.40gb"), "mig-3g.40gb");
  EXPECT_EQ(NvmlProfileName(SageMakerProfileName("1g.10gb+me")), "1g.10gb+me");
  EXPECT_EQ(NvmlProfileName("mig"), "mig");  // Only the whole prefix counts.
}

TEST(Catalog, UnknownGpuIsNotFoundAndListsTheKnownOnes) {
  auto gpu = FindGpu("h100-40gb");
  ASSERT_FALSE(gpu);
  EXPECT_EQ(gpu.error().code, ErrorCode::kNotFound);
  EXPECT_NE(gpu.error().message.find("'h100-40gb'"), std::string::npos);
  EXPECT_NE(gpu.error().message.find("h100-80gb"), std::string::npos);
}

TEST(Catalog, FindsGpusByPciDeviceId) {
  EXPECT_EQ(FindGpuByPciDeviceId(0x233010DE).value_or(nullptr), &Gpu("h100-80gb"));
  EXPECT_EQ(FindGpuByPciDeviceId(0x20B010DE).value_or(nullptr), &Gpu("a100-40gb"));
  auto none = FindGpuByPciDeviceId(0x12345678);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("0x12345678"), std::string::npos);
}

TEST(Catalog, H100ThreeSliceProfileHasSixtySmsAndStartsZeroAndFour) {
  auto p = FindProfile(Gpu("h100-80gb"), "mig-3g.40gb");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ((*p)->sms, 60);
  EXPECT_EQ(Starts(**p), (std::vector<int>{0, 4}));
  EXPECT_EQ((*p)->placement_size, 4);
  EXPECT_EQ((*p)->id, NvmlProfileId{9});
  EXPECT_EQ((*p)->memory_mib, 40448);
}

TEST(Catalog, SameProfileNameMeansDifferentGeometryOnDifferentGpus) {
  // "1g.24gb" is a 2-memory-slice profile on H100 NVL but a 1-slice one on RTX PRO 6000.
  auto nvl = FindProfile(Gpu("h100-nvl-94gb"), "1g.24gb");
  auto rtx = FindProfile(Gpu("rtx-pro-6000"), "1g.24gb");
  ASSERT_TRUE(nvl);
  ASSERT_TRUE(rtx);
  EXPECT_EQ((*nvl)->memory_slices, 2);
  EXPECT_EQ((*rtx)->memory_slices, 1);
  EXPECT_EQ((*rtx)->placement_size, 3);
}

TEST(Catalog, UnknownProfileIsNotFoundAndListsTheGpusProfiles) {
  auto p = FindProfile(Gpu("h100-80gb"), "mig-3g.20gb");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::kNotFound);
  EXPECT_NE(p.error().message.find("h100-80gb"), std::string::npos);
  EXPECT_NE(p.error().message.find("'mig-3g.20gb'"), std::string::npos);
  EXPECT_NE(p.error().message.find("3g.40gb"), std::string::npos);
}

TEST(Catalog, WholeGpuHasNoProfilesAndSaysSo) {
  auto p = FindProfile(Gpu("l4"), "1g.6gb");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("does not support MIG"), std::string::npos);
}

TEST(Catalog, SeedLayoutProfilesExistOnA100With40Gb) {
  const GpuModel& a100 = Gpu("a100-40gb");
  for (const char* name : {"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"}) {
    EXPECT_TRUE(FindProfile(a100, name)) << name;
  }
}

TEST(Catalog, ParsesFullMinimumDriverVersions) {
  EXPECT_EQ(Gpu("h100-80gb").min_driver, (DriverVersion{525, 85, 12}));
  EXPECT_EQ(Gpu("a30-24gb").min_driver, (DriverVersion{460, 73, 1}));
  auto p = FindProfile(Gpu("a100-40gb"), "1g.10gb");
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)->min_driver, (DriverVersion{525, 0, 0}));
}

TEST(Catalog, ParsesSuffixes) {
  const GpuModel& rtx = Gpu("rtx-pro-6000");
  EXPECT_EQ((*FindProfile(rtx, "1g.24gb+me.all"))->suffix, ProfileSuffix::kMeAll);
  EXPECT_EQ((*FindProfile(rtx, "1g.24gb-me"))->suffix, ProfileSuffix::kNoMe);
  EXPECT_EQ((*FindProfile(rtx, "2g.48gb+gfx"))->suffix, ProfileSuffix::kGfx);
  EXPECT_EQ((*FindProfile(Gpu("h100-80gb"), "1g.10gb+me"))->suffix, ProfileSuffix::kMe);
  EXPECT_EQ((*FindProfile(Gpu("h100-80gb"), "1g.10gb"))->suffix, ProfileSuffix::kNone);
}

TEST(Catalog, InferredRowsCarryLoweredConfidence) {
  const GpuModel& rtx5000 = Gpu("rtx-pro-5000");
  EXPECT_EQ(rtx5000.placement_confidence, Confidence::kLow);
  for (const MigProfile& p : rtx5000.profiles) {
    EXPECT_EQ(p.confidence, Confidence::kLow);
  }
  EXPECT_EQ((*FindProfile(Gpu("h100-80gb"), "3g.40gb"))->confidence, Confidence::kHigh);
}

TEST(Catalog, FindsInstanceTypesWithOrWithoutTheMlPrefix) {
  auto p4d = FindInstanceType("ml.p4d.24xlarge");
  ASSERT_TRUE(p4d);
  EXPECT_EQ((*p4d)->gpu_id, "a100-40gb");
  EXPECT_EQ((*p4d)->gpu_count, 8);
  EXPECT_EQ(FindInstanceType("p5.48xlarge").value_or(nullptr)->gpu_id, "h100-80gb");
  auto missing = FindInstanceType("ml.p9.48xlarge");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("ml.p4d.24xlarge"), std::string::npos);
}

TEST(Catalog, PricesComeFromTheReferenceUnlessOverridden) {
  const InstanceType& p5 = **FindInstanceType("ml.p5.48xlarge");
  EXPECT_DOUBLE_EQ(PriceUsdPerHour(p5, {}), 63.296);
  PriceOverrides overrides{{"ml.p5.48xlarge", 55.0}};
  EXPECT_DOUBLE_EQ(PriceUsdPerHour(p5, overrides), 55.0);
  const InstanceType& p4d = **FindInstanceType("ml.p4d.24xlarge");
  EXPECT_DOUBLE_EQ(PriceUsdPerHour(p4d, overrides), 25.251286);
}

}  // namespace
}  // namespace carve::catalog
