#include "agent/mps/mps_env.h"

#include <map>

#include <gtest/gtest.h>

namespace carve::agent::mps {
namespace {

std::map<std::string, std::string> AsMap(const EnvVars& env) { return {env.begin(), env.end()}; }

TEST(MpsEnv, EachCardGetsItsOwnPipeAndLogDirectory) {
  auto a = MpsDirsFor("/run/carve/mps", "GPU-aaaa");
  auto b = MpsDirsFor("/run/carve/mps", "GPU-bbbb");
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->pipe_dir, "/run/carve/mps/GPU-aaaa/pipe");
  EXPECT_EQ(a->log_dir, "/run/carve/mps/GPU-aaaa/log");
  EXPECT_NE(a->pipe_dir, b->pipe_dir);
  EXPECT_FALSE(MpsDirsFor("/run", "../etc").has_value());
  EXPECT_FALSE(MpsDirsFor("", "GPU-a").has_value());
}

TEST(MpsEnv, AWorkerGetsItsShareAsThreadPercentageAndPinnedMemory) {
  MpsDirs dirs{"/p", "/l"};
  auto env = MpsWorkerEnv(dirs, "GPU-aaaa", MpsShare{30, 1000});
  ASSERT_TRUE(env.has_value());
  auto m = AsMap(*env);
  EXPECT_EQ(m["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "30");
  EXPECT_EQ(m["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"], "0=1000M");
  EXPECT_EQ(m["CUDA_MPS_PIPE_DIRECTORY"], "/p");
  EXPECT_EQ(m["CUDA_MPS_LOG_DIRECTORY"], "/l");
  EXPECT_EQ(m["CUDA_VISIBLE_DEVICES"], "GPU-aaaa");
}

TEST(MpsEnv, AShareOutOfRangeNamesTheField) {
  MpsDirs dirs{"/p", "/l"};
  auto bad_core = MpsWorkerEnv(dirs, "GPU-a", MpsShare{0, 1000});
  ASSERT_FALSE(bad_core.has_value());
  EXPECT_NE(bad_core.error().message.find("core_percent 0"), std::string::npos);
  auto bad_mem = MpsWorkerEnv(dirs, "GPU-a", MpsShare{50, 0});
  ASSERT_FALSE(bad_mem.has_value());
  EXPECT_NE(bad_mem.error().message.find("memory_mib"), std::string::npos);
}

}  // namespace
}  // namespace carve::agent::mps
