#include "agent/launch/cgroup.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

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

// A workload without limits still gets a cgroup of its own (in both v1 hierarchies), unlimited.
TEST(Cgroup, NoLimitsStillGivesTheWorkloadItsOwnCgroup) {
  const std::string v2 = testing::TempDir();
  std::ofstream(v2 + "/cgroup.controllers") << "cpu memory";
  ASSERT_TRUE(CgroupManager(v2).Apply("task-0", 99, {}).ok());
  EXPECT_EQ(Read(v2 + "/carve/task-0/cgroup.procs"), "99");
  EXPECT_FALSE(fs::exists(v2 + "/carve/task-0/cpu.max"));
  EXPECT_FALSE(fs::exists(v2 + "/carve/task-0/memory.max"));
  const std::string v1 = testing::TempDir();
  fs::create_directories(v1 + "/cpu");
  fs::create_directories(v1 + "/memory");
  ASSERT_TRUE(CgroupManager(v1).Apply("task-0", 98, {}).ok());
  EXPECT_EQ(Read(v1 + "/cpu/carve/task-0/cgroup.procs"), "98");
  EXPECT_EQ(Read(v1 + "/memory/carve/task-0/cgroup.procs"), "98");
  EXPECT_FALSE(fs::exists(v1 + "/cpu/carve/task-0/cpu.cfs_quota_us"));
  EXPECT_FALSE(fs::exists(v1 + "/memory/carve/task-0/memory.limit_in_bytes"));
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

// Whether this process can create cgroups under the machine's real hierarchy (root in a VM: yes;
// an unprivileged container: no), found by trying.
bool CanCreateCgroups(CgroupVersion version) {
  const std::string probe = "carve-probe-" + std::to_string(::getpid());
  std::vector<fs::path> dirs;
  if (version == CgroupVersion::kV2) dirs = {fs::path("/sys/fs/cgroup") / probe};
  if (version == CgroupVersion::kV1) {
    dirs = {fs::path("/sys/fs/cgroup/cpu") / probe, fs::path("/sys/fs/cgroup/memory") / probe};
  }
  bool ok = !dirs.empty();
  for (const fs::path& d : dirs) {
    ok = ok && ::mkdir(d.c_str(), 0755) == 0;
    ::rmdir(d.c_str());
  }
  return ok;
}

// The real hierarchy of this machine: where cgroups can be created, our own child is moved into
// its cgroup and held to the limits; where they cannot, Apply says why and ApplyOrWarn only warns.
TEST(Cgroup, TheRealHierarchyHoldsAChildToItsLimitsWhereverCgroupsCanBeCreated) {
  CgroupManager cg;
  const CgroupVersion version = cg.Detect();
  const bool writable = CanCreateCgroups(version);
  const int pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  const std::string name = "carve-launch-test-" + std::to_string(pid);
  const HostLimits limits{500, int64_t{256} << 20};
  const bool applied = cg.ApplyOrWarn(name, pid, limits);
  EXPECT_EQ(applied, writable) << "cgroups can" << (writable ? "" : "not")
                               << " be created here, yet ApplyOrWarn answered " << applied;
  const std::string membership = Read("/proc/" + std::to_string(pid) + "/cgroup");
  if (version == CgroupVersion::kV2 && applied) {
    EXPECT_NE(membership.find("0::/carve/" + name + "\n"), std::string::npos) << membership;
    EXPECT_EQ(Read("/sys/fs/cgroup/carve/" + name + "/cpu.max"), "50000 100000\n");
    EXPECT_EQ(Read("/sys/fs/cgroup/carve/" + name + "/memory.max"), "268435456\n");
  } else if (version == CgroupVersion::kV1 && applied) {
    for (const char* controller : {"cpu", "memory"}) {
      bool member = false;
      std::istringstream lines(membership);
      for (std::string line; std::getline(lines, line);) {
        const auto c = line.find(':');
        const auto path = line.rfind(':');
        std::string controllers = "," + line.substr(c + 1, path - c - 1) + ",";
        member =
            member || (controllers.find(std::string(",") + controller + ",") != std::string::npos &&
                       line.substr(path + 1) == "/carve/" + name);
      }
      EXPECT_TRUE(member) << controller << " cgroup of the child: " << membership;
    }
    EXPECT_EQ(Read("/sys/fs/cgroup/cpu/carve/" + name + "/cpu.cfs_quota_us"), "50000\n");
    EXPECT_EQ(Read("/sys/fs/cgroup/memory/carve/" + name + "/memory.limit_in_bytes"),
              "268435456\n");
  } else {
    EXPECT_EQ(membership.find("/carve/" + name), std::string::npos) << membership;
    Status s = cg.Apply(name, pid, limits);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(s.error().code == ErrorCode::kFailedPrecondition ||
                s.error().code == ErrorCode::kInternal)
        << s.error().message;
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (applied) {
    EXPECT_TRUE(cg.Remove(name).ok());
    EXPECT_FALSE(fs::exists("/sys/fs/cgroup/carve/" + name));
    EXPECT_FALSE(fs::exists("/sys/fs/cgroup/cpu/carve/" + name));
    EXPECT_FALSE(fs::exists("/sys/fs/cgroup/memory/carve/" + name));
  }
}

}  // namespace
}  // namespace carve::launch
