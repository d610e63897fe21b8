// Discovery, carving and failure handling through LibNvml's real dlopen path, against the fake
// libnvidia-ml.so.1 standing in for an 8 x A100 node and an H200 host.
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

struct ProbeRun {
  int exit_code = -1;
  std::string out;  // stdout: the JSON document, nothing else
  std::string err;  // stderr: log lines
  nlohmann::json json;
};

// The read-only probe binary, run as tests/gpu/run.sh and device-check.sh run it.
ProbeRun RunProbe(const std::string& library, const std::string& config) {
  setenv("CARVE_FAKE_NVML_CONFIG", config.c_str(), 1);
  char err_path[] = "/tmp/carve-probe-stderr-XXXXXX";
  const int fd = mkstemp(err_path);
  close(fd);
  const std::string cmd =
      std::string(CARVE_NVML_PROBE_PATH) + " --library " + library + " 2>" + err_path;
  ProbeRun run;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) run.out.append(buf, n);
  run.exit_code = WEXITSTATUS(pclose(pipe));
  if (FILE* f = fopen(err_path, "r")) {
    while (size_t n = fread(buf, 1, sizeof(buf), f)) run.err.append(buf, n);
    fclose(f);
  }
  unlink(err_path);
  run.json = nlohmann::json::parse(run.out, nullptr, false);
  return run;
}

TEST(MigDlopen, ProbePrintsTheNodeAsJson) {
  ProbeRun r = RunProbe(CARVE_FAKE_LIBNVML_PATH, "gpus: 2 x h100-80gb, driver 560.35.03");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_FALSE(r.json.is_discarded()) << r.out;
  EXPECT_EQ(r.json["status"], "ok");
  EXPECT_EQ(r.json["gpus"].size(), 2u);
  EXPECT_EQ(r.json["gpus"][0]["catalog_model"], "h100-80gb");
  EXPECT_EQ(r.json["summary"]["placement_differences"], 0);
  EXPECT_GT(r.json["summary"]["profiles_compared"], 0);
}

// Issue 21's reproduction: an H200 on driver 535 differs from the catalog. The differences are
// logged (stderr) and reported (the JSON); stdout holds the JSON and nothing else.
TEST(MigDlopen, ProbeStdoutIsOneJsonDocumentWhileDifferencesAreLogged) {
  ProbeRun r = RunProbe(CARVE_FAKE_LIBNVML_PATH, "gpus: h200-141gb, driver: 535.54.03");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(r.json.is_discarded()) << "stdout is not JSON: " << r.out;
  EXPECT_FALSE(r.json["differences"].empty());
  EXPECT_NE(r.err.find("differs from the catalog"), std::string::npos) << r.err;
}

// A library that is there but lacks entry points carve needs is a failure, not a skip.
TEST(MigDlopen, ProbeReportsAnNvmlWithoutCarvesEntryPointsAsAnError) {
  ProbeRun r = RunProbe(CARVE_INTERPOSER_FAKE_NVML_PATH, "gpus: a100-40gb");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  ASSERT_FALSE(r.json.is_discarded()) << r.out;
  EXPECT_EQ(r.json["status"], "error");
  EXPECT_NE(r.json["reason"].get<std::string>().find("lacks NVML entry points"), std::string::npos);
}

// With MIG off and no root the placements are refused: the report must say nothing was
// compared, and why, rather than count no differences as a match.
TEST(MigDlopen, ProbeSaysNothingWasComparedWhenPlacementsAreRefused) {
  ProbeRun r = RunProbe(CARVE_FAKE_LIBNVML_PATH,
                        "gpus: h200-141gb, driver: 570.124.06, mig: disabled, user: unprivileged");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(r.json.is_discarded()) << r.out;
  EXPECT_EQ(r.json["summary"]["profiles_compared"], 0);
  EXPECT_EQ(r.json["gpus"][0]["profiles_compared"], 0);
  EXPECT_NE(r.json["gpus"][0]["profiles_unread"].get<std::string>().find("MIG is disabled"),
            std::string::npos)
      << r.out;
}

TEST(MigDlopen, ProbeMakesTheReadOnlyQueriesTheAgentReliesOn) {
  ProbeRun r =
      RunProbe(CARVE_FAKE_LIBNVML_PATH, "gpus: a100-40gb, process: pid=4242 gpu=0 mib=512");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(r.json.is_discarded()) << r.out;
  const auto& calls = r.json["read_only_calls"][0];
  EXPECT_EQ(calls["gpu_instances"], nlohmann::json::array());
  EXPECT_EQ(calls["mig_devices"], nlohmann::json::array());
  EXPECT_EQ(calls["compute_processes"][0]["pid"], 4242);
  EXPECT_EQ(calls["compute_processes"][0]["mib"], 512);
  EXPECT_TRUE(calls["utilization"].contains("gpu_percent")) << calls;
}

TEST(MigDlopen, ProbeSkipsCleanlyWithoutNvml) {
  ProbeRun r = RunProbe("/nonexistent/libnvidia-ml.so.1", "gpus: a100-40gb");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  ASSERT_FALSE(r.json.is_discarded()) << r.out;
  EXPECT_EQ(r.json["status"], "skipped");
}

}  // namespace
}  // namespace carve::agent
