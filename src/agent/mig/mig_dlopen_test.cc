// Discovery, carving and failure handling through LibNvml's real dlopen path, against the fake
// libnvidia-ml.so.1 standing in for an 8 x A100 node and an H200 host.
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "agent/mig/carver.h"
#include "agent/mig/discovery.h"
#include "agent/nvml/fake_libnvml_loader.h"
#include "catalog/catalog.h"

namespace carve::agent {
namespace {

std::unique_ptr<LibNvml> LoadFake(const std::string& config) {
  auto nvml = LoadFakeLibNvml(CARVE_FAKE_LIBNVML_PATH, config);
  EXPECT_TRUE(nvml.has_value()) << nvml.error().message;
  return nvml.has_value() ? std::move(nvml).value() : nullptr;
}

core::Layout PlanOf(std::string_view gpu, std::initializer_list<std::pair<const char*, int>> l) {
  core::Layout layout;
  layout.gpu = *catalog::FindGpu(gpu);
  for (const auto& [name, start] : l) {
    layout.instances.push_back(
        core::PlacedInstance{*catalog::FindProfile(*layout.gpu, name), start});
  }
  return layout;
}

TEST(MigDlopen, DiscoversAnEightGpuA100Node) {
  auto nvml = LoadFake("gpus: 8 x a100-40gb, driver 550.54.15, mig: enabled");
  ASSERT_NE(nvml, nullptr);
  auto node = DiscoverNode(*nvml);
  ASSERT_TRUE(node.has_value()) << node.error().message;
  ASSERT_EQ(node->gpus.size(), 8u);
  for (const auto& gpu : node->gpus) {
    ASSERT_NE(gpu.model, nullptr);
    EXPECT_EQ(gpu.model->id, "a100-40gb");
    EXPECT_EQ(gpu.profiles.size(), 7u);
  }
  EXPECT_NE(node->gpus[0].device.uuid, node->gpus[7].device.uuid);
  EXPECT_TRUE(node->differences.empty()) << node->differences[0].message;
}

TEST(MigDlopen, DiscoversAnH200WithItsPlacements) {
  auto nvml = LoadFake("gpus: h200-141gb, driver 560.35.03");
  ASSERT_NE(nvml, nullptr);
  auto node = DiscoverNode(*nvml);
  ASSERT_TRUE(node.has_value()) << node.error().message;
  ASSERT_EQ(node->gpus.size(), 1u);
  const DiscoveredGpu& gpu = node->gpus[0];
  EXPECT_EQ(gpu.model->id, "h200-141gb");
  bool saw_1g35 = false;
  for (const auto& p : gpu.profiles) {
    if (p.info && p.info->name == "1g.35gb") {
      saw_1g35 = true;
      EXPECT_EQ(p.placements, (std::vector<GiPlacement>{{0, 2}, {2, 2}, {4, 2}, {6, 2}}));
    }
  }
  EXPECT_TRUE(saw_1g35);
  EXPECT_TRUE(node->differences.empty()) << node->differences[0].message;
}

TEST(MigDlopen, CarvesAndTearsDownAnA100) {
  auto nvml = LoadFake("gpus: 8 x a100-40gb");
  ASSERT_NE(nvml, nullptr);
  Carver carver(*nvml);
  const GpuIndex gpu{5};
  auto carved =
      carver.Apply(gpu, PlanOf("a100-40gb", {{"3g.20gb", 4}, {"2g.10gb", 0}, {"1g.5gb", 2}}));
  ASSERT_TRUE(carved.has_value()) << carved.error().message;
  ASSERT_EQ(carved->size(), 3u);
  for (const auto& c : *carved) EXPECT_EQ(c.mig_uuid.rfind("MIG-", 0), 0u);
  EXPECT_EQ(nvml->ListGpuInstances(gpu)->size(), 3u);
  EXPECT_TRUE(nvml->ListGpuInstances(GpuIndex{4})->empty());
  ASSERT_TRUE(carver.Teardown(gpu, *carved).ok());
  EXPECT_TRUE(nvml->ListGpuInstances(gpu)->empty());
  EXPECT_TRUE(nvml->ListMigDevices(gpu)->empty());
}

TEST(MigDlopen, RollsBackWhenTheConfiguredCreateFails) {
  auto nvml = LoadFake("gpus: a100-40gb, fail-create: 3");
  ASSERT_NE(nvml, nullptr);
  auto carved = Carver(*nvml).Apply(
      GpuIndex{0}, PlanOf("a100-40gb", {{"2g.10gb", 0}, {"2g.10gb", 2}, {"3g.20gb", 4}}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kResourceExhausted);
  EXPECT_TRUE(nvml->ListGpuInstances(GpuIndex{0})->empty());
}

TEST(MigDlopen, ALostDeviceIsReportedAndCarvingItIsUnavailable) {
  auto nvml = LoadFake("gpus: 2 x a100-40gb, lost: 1");
  ASSERT_NE(nvml, nullptr);
  auto node = DiscoverNode(*nvml);
  ASSERT_TRUE(node.has_value());
  ASSERT_TRUE(node->gpus[1].error.has_value());
  EXPECT_NE(node->gpus[1].error->message.find("NVML_ERROR_GPU_IS_LOST"), std::string::npos);
  auto carved = Carver(*nvml).Apply(GpuIndex{1}, PlanOf("a100-40gb", {{"7g.40gb", 0}}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kUnavailable);
}

TEST(MigDlopen, RefusesABusyGpuReportedByTheLibrary) {
  auto nvml = LoadFake("gpus: a100-40gb, process: pid=31337 gpu=0 mib=100");
  ASSERT_NE(nvml, nullptr);
  auto carved = Carver(*nvml).Apply(GpuIndex{0}, PlanOf("a100-40gb", {{"7g.40gb", 0}}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(carved.error().message.find("31337"), std::string::npos);
}

TEST(MigDlopen, ReportsADriverTooOldForMig) {
  auto nvml = LoadFake("gpus: 2 x a100-40gb, driver: 440.33.01");
  ASSERT_NE(nvml, nullptr);
  auto node = DiscoverNode(*nvml);
  ASSERT_TRUE(node.has_value()) << node.error().message;
  EXPECT_FALSE(node->gpus[0].mig_capable);
  ASSERT_EQ(node->differences.size(), 2u);
  EXPECT_EQ(node->differences[1].kind, DifferenceKind::kDriverTooOld);
  EXPECT_EQ(node->differences[1].gpu, GpuIndex{1});
  auto carved = Carver(*nvml).Apply(GpuIndex{0}, PlanOf("a100-40gb", {{"7g.40gb", 0}}));
  ASSERT_FALSE(carved.has_value());
  EXPECT_EQ(carved.error().code, ErrorCode::kFailedPrecondition);
}

// The read-only probe binary, run as tests/gpu/run.sh runs it, against the fake library.
TEST(MigDlopen, ProbePrintsTheNodeAsJson) {
  setenv("CARVE_FAKE_NVML_CONFIG", "gpus: 2 x h100-80gb, driver 560.35.03", 1);
  const std::string cmd =
      std::string(CARVE_NVML_PROBE_PATH) + " --library " + CARVE_FAKE_LIBNVML_PATH + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  ASSERT_EQ(WEXITSTATUS(status), 0) << out;
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["catalog_model"], "h100-80gb");
  EXPECT_EQ(j["summary"]["placement_differences"], 0);
}

TEST(MigDlopen, ProbeSkipsCleanlyWithoutNvml) {
  const std::string cmd =
      std::string(CARVE_NVML_PROBE_PATH) + " --library /nonexistent/libnvidia-ml.so.1 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 3) << out;
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["status"], "skipped");
}

}  // namespace
}  // namespace carve::agent
