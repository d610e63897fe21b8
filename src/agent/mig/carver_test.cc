#include "agent/mig/carver.h"

#include <gtest/gtest.h>

#include <set>

#include "agent/nvml/fake_nvml.h"
#include "catalog/catalog.h"

namespace carve::agent {
namespace {

constexpr GpuIndex kGpu0{0};

// "a100-40gb", {"3g.20gb@4", "2g.10gb@0"} -> a Layout in that creation order.
core::Layout PlanOf(std::string_view gpu, std::initializer_list<std::string_view> instances) {
  core::Layout layout;
  layout.gpu = *catalog::FindGpu(gpu);
  for (std::string_view text : instances) {
    size_t at = text.find('@');
    auto profile = catalog::FindProfile(*layout.gpu, text.substr(0, at));
    EXPECT_TRUE(profile.has_value()) << text;
    layout.instances.push_back(
        core::PlacedInstance{*profile, std::stoi(std::string(text.substr(at + 1)))});
  }
  return layout;
}

std::unique_ptr<FakeNvml> Node(std::string_view text) {
  auto nvml = FakeNvml::FromText(text);
  EXPECT_TRUE(nvml.has_value()) << nvml.error().message;
  return std::move(nvml).value();
}

// (profile id, start) of every GPU instance on the GPU, for "nothing changed" assertions.
std::set<std::pair<uint32_t, uint32_t>> Carved(FakeNvml& nvml, GpuIndex gpu) {
  std::set<std::pair<uint32_t, uint32_t>> out;
  const auto gis = nvml.ListGpuInstances(gpu);  // Keep the Result alive across the loop.
  for (const auto& gi : *gis) {
    out.emplace(gi.profile_id.value(), gi.placement.start);
  }
  return out;
}

TEST(Carver, CarvesTheLayoutInOrderWithAFullComputeInstanceEach) {
  auto nvml = Node("gpus: a100-40gb");
  auto carved =
      Carver(*nvml).Apply(kGpu0, PlanOf("a100-40gb", {"3g.20gb@4", "2g.10gb@0", "1g.5gb@2"}));
  ASSERT_TRUE(carved.has_value()) << carved.error().message;
  ASSERT_EQ(carved->size(), 3u);
  EXPECT_EQ((*carved)[0].profile->name, "3g.20gb");
  EXPECT_EQ((*carved)[0].start, 4);
  EXPECT_EQ((*carved)[2].profile->name, "1g.5gb");
  const auto& journal = nvml->core().journal();
  ASSERT_EQ(journal.size(), 6u);
  EXPECT_EQ(journal[0], "gpu0 create-gi 1 (3g.20gb@4)");
  EXPECT_EQ(journal[2], "gpu0 create-gi 2 (2g.10gb@0)");
  EXPECT_EQ(journal[4], "gpu0 create-gi 3 (1g.5gb@2)");
  const auto gis = nvml->ListGpuInstances(kGpu0);
  ASSERT_EQ(gis->size(), 3u);
  for (const auto& gi : *gis) {
    EXPECT_EQ(gi.compute_instances.size(), 1u);
  }
}

TEST(Carver, ReturnsEachPartitionsMigUuid) {
  auto nvml = Node("gpus: a100-40gb");
  auto carved = Carver(*nvml).Apply(kGpu0, PlanOf("a100-40gb", {"3g.20gb@0", "3g.20gb@4"}));
  ASSERT_TRUE(carved.has_value()) << carved.error().message;
  auto migs = *nvml->ListMigDevices(kGpu0);
  ASSERT_EQ(migs.size(), 2u);
  for (const CarvedInstance& c : *carved) {
    EXPECT_EQ(c.mig_uuid.rfind("MIG-", 0), 0u);
    bool found = false;
    for (const auto& m : migs)
      found = found || (m.uuid == c.mig_uuid && m.gpu_instance == c.gpu_instance);
    EXPECT_TRUE(found) << c.mig_uuid;
  }
  EXPECT_NE((*carved)[0].mig_uuid, (*carved)[1].mig_uuid);
}

// A failed creation rolls back the instances already made on that GPU.
TEST(Carver, RollsBackOnPartialFailure) {
  auto nvml = Node("gpus: a100-40gb");
  nvml->core().FailNthCreate(2);
  auto carved = Carver(*nvml).Apply(kGpu0, PlanOf("a100-40gb", {"3g.20gb@0", "3g.20gb@4"}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(carved.error().message.find("instance 2 of 2 (3g.20gb@4)"), std::string::npos)
      << carved.error().message;
  EXPECT_TRUE(nvml->ListGpuInstances(kGpu0)->empty());
  EXPECT_TRUE(nvml->ListMigDevices(kGpu0)->empty());
}

TEST(Carver, RollsBackWhenTheNthOfSevenFails) {
  auto nvml = Node("gpus: a100-40gb");
  nvml->core().FailNthCreate(6);
  auto carved = Carver(*nvml).Apply(
      kGpu0, PlanOf("a100-40gb", {"1g.5gb@0", "1g.5gb@1", "1g.5gb@2", "1g.5gb@3", "1g.5gb@4",
                                  "1g.5gb@5", "1g.5gb@6"}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_TRUE(nvml->ListGpuInstances(kGpu0)->empty());
  // Rolled back in reverse: the 5th instance goes first, the 1st last.
  const auto& journal = nvml->core().journal();
  EXPECT_EQ(journal[journal.size() - 1], "gpu0 destroy-gi 1");
  EXPECT_EQ(journal[journal.size() - 9], "gpu0 destroy-gi 5");
}

TEST(Carver, RollsBackWhenAComputeInstanceFails) {
  auto nvml = Node("gpus: a100-40gb");
  nvml->core().FailNthComputeCreate(2);
  auto carved = Carver(*nvml).Apply(kGpu0, PlanOf("a100-40gb", {"4g.20gb@0", "3g.20gb@4"}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kResourceExhausted);
  EXPECT_TRUE(nvml->ListGpuInstances(kGpu0)->empty());
}

TEST(Carver, RefusesToRecarveABusyGpu) {
  auto nvml = Node("gpus: a100-40gb");
  ASSERT_TRUE(Carver(*nvml).Apply(kGpu0, PlanOf("a100-40gb", {"7g.40gb@0"})).has_value());
  nvml->core().AddProcess(0, 4242, 1024, 1, 0);
  nvml->core().AddProcess(0, 4243, 1024, 1, 0);
  const auto before = Carved(*nvml, kGpu0);
  auto carved = Carver(*nvml).Apply(kGpu0, PlanOf("a100-40gb", {"3g.20gb@0", "3g.20gb@4"}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(carved.error().message.find("pids 4242, 4243"), std::string::npos)
      << carved.error().message;
  EXPECT_EQ(Carved(*nvml, kGpu0), before);
}

TEST(Carver, ReportsAPendingMigModeOnceWithoutCreatingAnything) {
  auto nvml = Node("gpus: a100-40gb, mig: pending-enable");
  auto carved = Carver(*nvml).Apply(kGpu0, PlanOf("a100-40gb", {"7g.40gb@0"}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(carved.error().message.find("pending a GPU reset"), std::string::npos)
      << carved.error().message;
  EXPECT_EQ(nvml->core().gpu_instance_create_calls(), 0);
}

TEST(Carver, RefusesAGpuWithMigDisabled) {
  auto nvml = Node("gpus: a100-40gb, mig: disabled");
  auto carved = Carver(*nvml).Apply(kGpu0, PlanOf("a100-40gb", {"7g.40gb@0"}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(carved.error().message.find("MIG mode disabled"), std::string::npos);
}

TEST(Carver, ReapplyingTheSameLayoutAdoptsItUnchanged) {
  auto nvml = Node("gpus: a100-40gb");
  const auto layout = PlanOf("a100-40gb", {"3g.20gb@4", "2g.10gb@0"});
  auto first = Carver(*nvml).Apply(kGpu0, layout);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  const size_t journal_size = nvml->core().journal().size();
  nvml->core().AddProcess(0, 99, 10, 1, 0);  // Adopting is allowed while work runs.
  auto second = Carver(*nvml).Apply(kGpu0, layout);
  ASSERT_TRUE(second.has_value()) << second.error().message;
  EXPECT_EQ(nvml->core().journal().size(), journal_size);
  ASSERT_EQ(second->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*second)[i].mig_uuid, (*first)[i].mig_uuid);
    EXPECT_EQ((*second)[i].gpu_instance, (*first)[i].gpu_instance);
  }
}

TEST(Carver, ReplacesADifferentLayoutOnAnIdleGpu) {
  auto nvml = Node("gpus: a100-40gb");
  ASSERT_TRUE(Carver(*nvml).Apply(kGpu0, PlanOf("a100-40gb", {"7g.40gb@0"})).has_value());
  auto carved = Carver(*nvml).Apply(kGpu0, PlanOf("a100-40gb", {"3g.20gb@0", "3g.20gb@4"}));
  ASSERT_TRUE(carved.has_value()) << carved.error().message;
  EXPECT_EQ(Carved(*nvml, kGpu0), (std::set<std::pair<uint32_t, uint32_t>>{{9, 0}, {9, 4}}));
}

TEST(Carver, TearsDownInReverseOrder) {
  auto nvml = Node("gpus: a100-40gb");
  Carver carver(*nvml);
  auto carved = carver.Apply(kGpu0, PlanOf("a100-40gb", {"3g.20gb@4", "2g.10gb@0"}));
  ASSERT_TRUE(carved.has_value());
  ASSERT_TRUE(carver.Teardown(kGpu0, *carved).ok());
  const auto& j = nvml->core().journal();
  ASSERT_EQ(j.size(), 8u);
  EXPECT_EQ(j[4], "gpu0 destroy-ci 2/0");
  EXPECT_EQ(j[5], "gpu0 destroy-gi 2");
  EXPECT_EQ(j[6], "gpu0 destroy-ci 1/0");
  EXPECT_EQ(j[7], "gpu0 destroy-gi 1");
  EXPECT_TRUE(nvml->ListGpuInstances(kGpu0)->empty());
}

TEST(Carver, AFailureOnOneGpuLeavesTheOthersAlone) {
  auto nvml = Node("gpus: 2 x a100-40gb");
  Carver carver(*nvml);
  ASSERT_TRUE(carver.Apply(GpuIndex{1}, PlanOf("a100-40gb", {"7g.40gb@0"})).has_value());
  nvml->core().FailNthCreate(1);
  ASSERT_FALSE(carver.Apply(kGpu0, PlanOf("a100-40gb", {"7g.40gb@0"})).has_value());
  EXPECT_EQ(Carved(*nvml, GpuIndex{1}), (std::set<std::pair<uint32_t, uint32_t>>{{0, 0}}));
  EXPECT_TRUE(Carved(*nvml, kGpu0).empty());
}

TEST(Carver, RejectsAStartNvmlDoesNotAllow) {
  auto nvml = Node("gpus: a100-40gb");
  auto layout = PlanOf("a100-40gb", {"3g.20gb@0"});
  layout.instances[0].start = 2;
  auto carved = Carver(*nvml).Apply(kGpu0, layout);
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(carved.error().message.find("allows only [0:4, 4:4]"), std::string::npos)
      << carved.error().message;
  EXPECT_EQ(nvml->core().gpu_instance_create_calls(), 0);
}

TEST(Carver, RejectsALayoutForAnotherGpuModel) {
  auto nvml = Node("gpus: a100-40gb");
  auto carved = Carver(*nvml).Apply(kGpu0, PlanOf("a100-80gb", {"7g.80gb@0"}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(carved.error().message.find("layout is for a100-80gb"), std::string::npos);
}

TEST(Carver, ALostGpuIsUnavailable) {
  auto nvml = Node("gpus: a100-40gb, lost: 0");
  auto carved = Carver(*nvml).Apply(kGpu0, PlanOf("a100-40gb", {"7g.40gb@0"}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kUnavailable);
}

TEST(Carver, CarvesAnH200) {
  auto nvml = Node("gpus: h200-141gb, driver: 560.35.03");
  auto carved = Carver(*nvml).Apply(GpuIndex{0},
                                    PlanOf("h200-141gb", {"4g.71gb@0", "2g.35gb@4", "1g.18gb@6"}));
  ASSERT_TRUE(carved.has_value()) << carved.error().message;
  EXPECT_EQ(carved->size(), 3u);
}

}  // namespace
}  // namespace carve::agent
