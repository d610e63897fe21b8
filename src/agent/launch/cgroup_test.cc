#include "agent/launch/cgroup.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/launch/test_util.h"

namespace carve::launch {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A directory standing in for /sys/fs/cgroup: the files it writes are checked afterwards.
TEST(Cgroup, V2WritesCpuMaxMemoryMaxAndProcs) {
  const std::string root = testing::TempDir();
  std::ofstream(root + "/cgroup.controllers") << "cpu memory";
  CgroupManager cg(root);
  ASSERT_EQ(cg.Detect(), CgroupVersion::kV2);
  ASSERT_TRUE(cg.Apply("ic-a-0", 4242, {1500, 2 << 20}).ok());
  EXPECT_EQ(Read(root + "/carve/ic-a-0/cpu.max"), "150000 100000");
  EXPECT_EQ(Read(root + "/carve/ic-a-0/memory.max"), std::to_string(2 << 20));
  EXPECT_EQ(Read(root + "/carve/ic-a-0/cgroup.procs"), "4242");
  EXPECT_EQ(Read(root + "/carve/cgroup.subtree_control"), "+cpu +memory");
}

TEST(Cgroup, V1WritesCfsQuotaAndMemoryLimit) {
  const std::string root = testing::TempDir();
  fs::create_directories(root + "/cpu");
  fs::create_directories(root + "/memory");
  CgroupManager cg(root);
  ASSERT_EQ(cg.Detect(), CgroupVersion::kV1);
  ASSERT_TRUE(cg.Apply("ic-a-0", 7, {500, 1 << 20}).ok());
  EXPECT_EQ(Read(root + "/cpu/carve/ic-a-0/cpu.cfs_quota_us"), "50000");
  EXPECT_EQ(Read(root + "/cpu/carve/ic-a-0/cpu.cfs_period_us"), "100000");
  EXPECT_EQ(Read(root + "/memory/carve/ic-a-0/memory.limit_in_bytes"), std::to_string(1 << 20));
}

TEST(Cgroup, UnwritableRootWarnsAndCarriesOn) {
  const std::string dir = testing::TempDir();
  std::ofstream(dir + "/not-a-dir") << "x";
  CgroupManager cg(dir + "/not-a-dir");  // nothing can be created under a regular file
  EXPECT_EQ(cg.Detect(), CgroupVersion::kNone);
  auto s = cg.Apply("w", 1, {1000, std::nullopt});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_FALSE(cg.ApplyOrWarn("w", 1, {1000, std::nullopt}));
}

TEST(Cgroup, V2FailureToWriteNamesTheFile) {
  const std::string root = testing::TempDir();
  std::ofstream(root + "/cgroup.controllers") << "";
  std::ofstream(root + "/carve") << "a file where the parent cgroup should be";
  auto s = CgroupManager(root).Apply("w", 1, {1000, std::nullopt});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(root + "/carve"), std::string::npos);
}

TEST(Cgroup, RejectsNonPositiveLimits) {
  auto s = CgroupManager(testing::TempDir()).Apply("w", 1, {0, std::nullopt});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("millicores"), std::string::npos);
}

// The real hierarchy of this machine: either the limits are in force for our own child, or the
// attempt ends in a warning; it never aborts.
TEST(Cgroup, RealAttemptOnThisHostEitherAppliesOrWarns) {
  CgroupManager cg;
  const int pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  const bool applied = cg.ApplyOrWarn("carve-launch-test-" + std::to_string(pid), pid,
                                      {500, 256 << 20});
  if (applied) {
    EXPECT_EQ(cg.Detect() == CgroupVersion::kNone, false);
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (applied) {
    EXPECT_TRUE(cg.Remove("carve-launch-test-" + std::to_string(pid)).ok());
  }
}

}  // namespace
}  // namespace carve::launch
