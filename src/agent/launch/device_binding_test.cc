#include "agent/launch/device_binding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "agent/launch/test_util.h"

namespace carve::launch {
namespace {

std::string Get(const EnvVars& env, const std::string& key) {
  auto it = std::find_if(env.begin(), env.end(), [&](const auto& kv) { return kv.first == key; });
  return it == env.end() ? "<unset>" : it->second;
}

TEST(DeviceBinding, MigPartitionNamesTheMigDevice) {
  auto env = BindingEnv(MigBinding{"4b2c3d1e-0000-5111-8222-123456789abc"});
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(Get(*env, "CUDA_VISIBLE_DEVICES"), "MIG-4b2c3d1e-0000-5111-8222-123456789abc");
  EXPECT_EQ(Get(BindingEnv(MigBinding{"MIG-abc"}).value(), "CUDA_VISIBLE_DEVICES"), "MIG-abc");
}

TEST(DeviceBinding, MgpuShareInjectsTheInterposerAndItsLedger) {
  auto env = BindingEnv(MgpuBinding{"GPU-1", "/opt/carve/libcarve-mgpu.so", "/run/w1.ledger"});
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(Get(*env, "CUDA_VISIBLE_DEVICES"), "GPU-1");
  EXPECT_EQ(Get(*env, "LD_PRELOAD"), InterposerPreload("/opt/carve/libcarve-mgpu.so"));
  EXPECT_EQ(Get(*env, "CARVE_MGPU_LEDGER"), "/run/w1.ledger");
}

TEST(DeviceBinding, ThePreloadIsTheInterposerAloneOutsideAsanBuilds) {
  const std::string lib = "/opt/carve/libcarve-mgpu.so";
#ifdef CARVE_ASAN_RUNTIME
  EXPECT_EQ(InterposerPreload(lib), std::string(CARVE_ASAN_RUNTIME) + ":" + lib);
#else
  EXPECT_EQ(InterposerPreload(lib), lib);
#endif
}

TEST(DeviceBinding, MgpuShareRejectsARelativeLedgerPath) {
  auto env = BindingEnv(MgpuBinding{"GPU-1", "/lib.so", "w1.ledger"});
  ASSERT_FALSE(env.has_value());
  EXPECT_NE(env.error().message.find("ledger path"), std::string::npos);
}

TEST(DeviceBinding, MpsShareUsesTheMpsWorkerEnvironment) {
  auto dirs = agent::mps::MpsDirsFor("/run/mps", "GPU-1").value();
  auto env = BindingEnv(MpsBinding{"GPU-1", dirs, {30, 1000}});
  ASSERT_TRUE(env.has_value()) << env.error().message;
  EXPECT_EQ(Get(*env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "30");
}

TEST(DeviceBinding, NoGpuHidesEveryDevice) {
  EXPECT_EQ(Get(BindingEnv(std::monostate{}).value(), "CUDA_VISIBLE_DEVICES"), "");
}

TEST(DeviceBinding, WholeGpusListEveryCardAndCarryExtraVariables) {
  auto env = BindingEnv(GpuBinding{{"GPU-a", "GPU-b"}, {{"CARVE_MGPU_CORE_PERCENT", "30"}}});
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(Get(*env, "CUDA_VISIBLE_DEVICES"), "GPU-a,GPU-b");
  EXPECT_EQ(Get(*env, "CARVE_MGPU_CORE_PERCENT"), "30");
  EXPECT_FALSE(BindingEnv(GpuBinding{}).has_value());
}

TEST(DeviceBinding, FindsTheInterposerBesideTheBinaryThenInTheBuildTree) {
  namespace fs = std::filesystem;
  const fs::path root = testing::TempDir();
  fs::create_directories(root / "build/src/interposer");
  const std::string carve = (root / "build/carve").string();
  EXPECT_EQ(FindInterposerLibrary(carve), "");
  std::ofstream(root / "build/src/interposer/libcarve-mgpu.so") << "elf";
  EXPECT_EQ(FindInterposerLibrary(carve),
            fs::canonical(root / "build/src/interposer/libcarve-mgpu.so").string());
  std::ofstream(root / "build/libcarve-mgpu.so") << "elf";
  EXPECT_EQ(FindInterposerLibrary(carve), fs::canonical(root / "build/libcarve-mgpu.so").string());
  EXPECT_EQ(FindInterposerLibrary(""), "");
  fs::remove_all(root);
}

TEST(DeviceBinding, CreatesTheWorkerLedgerTheInterposerOpens) {
  const std::string path = testing::TempDir() + "/w1.ledger";
  interposer::LedgerSettings s;
  s.worker_id = "w1";
  s.memory_limit_bytes = 1 << 30;
  s.core_percent = 30;
  auto ledger = CreateWorkerLedger(path, s);
  ASSERT_TRUE(ledger.has_value()) << ledger.error().message;
  auto opened = interposer::Ledger::Open(path, std::make_shared<interposer::ProcfsProcessProbe>());
  ASSERT_TRUE(opened.has_value());
  EXPECT_EQ((*opened)->settings(), s);
  EXPECT_EQ(CreateWorkerLedger(path, s).error().code, ErrorCode::kAlreadyExists);
}

}  // namespace
}  // namespace carve::launch
