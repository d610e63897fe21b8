#include "agent/launch/sandbox.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

namespace carve::launch {
namespace {

const SandboxTools kTools{"/usr/bin/setpriv", "/usr/bin/bwrap"};

// Index of the first `a` followed by `b` in v, or -1.
long PairAt(const std::vector<std::string>& v, const std::string& a, const std::string& b) {
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    if (v[i] == a && v[i + 1] == b) return static_cast<long>(i);
  }
  return -1;
}

SandboxSpec Spec() {
  SandboxSpec s;
  s.uid = 200003;
  s.gid = 200003;
  s.hidden = {"/srv/carve"};
  s.writable = {"/srv/carve/logs/job/copy-0"};
  s.read_only = {"/srv/models/m"};
  return s;
}

TEST(SandboxArgv, RunsBwrapThenDropsToTheUidWithNoGroupsOrCapabilities) {
  const std::vector<std::string> cmd = {"sh", "-c", "id"};
  auto argv = SandboxArgv(Spec(), kTools, cmd);
  EXPECT_EQ(argv.front(), "/usr/bin/bwrap");
  const std::vector<std::string> drop = {
      "--",     "/usr/bin/setpriv", "--reuid",        "200003",          "--regid",
      "200003", "--clear-groups",   "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all",
      "--"};
  ASSERT_GT(argv.size(), drop.size() + cmd.size());
  const auto at = argv.end() - static_cast<long>(drop.size() + cmd.size());
  EXPECT_EQ(std::vector<std::string>(at, at + static_cast<long>(drop.size())), drop);
}

// An installation under /tmp (a build tree, a CI clone) stays readable behind the private /tmp,
// and a data dir inside it stays hidden: visible paths are bound before anything is hidden.
TEST(SandboxArgv, VisiblePathsComeBackAfterThePrivateTmpAndBeforeTheHiddenDirs) {
  SandboxSpec s = Spec();
  s.visible = {"/tmp/ci/main"};
  s.hidden = {"/tmp/ci/main/carve-data"};
  auto argv = SandboxArgv(s, kTools, {"sh"});
  const long tmp = PairAt(argv, "--tmpfs", "/tmp");
  const long visible = PairAt(argv, "--ro-bind", "/tmp/ci/main");
  const long hidden = PairAt(argv, "--tmpfs", "/tmp/ci/main/carve-data");
  ASSERT_GE(tmp, 0);
  ASSERT_GE(visible, 0);
  ASSERT_GE(hidden, 0);
  EXPECT_LT(tmp, visible);
  EXPECT_LT(visible, hidden);
}

TEST(SandboxArgv, MakesEveryParentOfABindTraversable) {
  auto argv = SandboxArgv(Spec(), kTools, {"sh"});
  const long hide = PairAt(argv, "--tmpfs", "/srv/carve");
  const long parent = PairAt(argv, "--dir", "/srv/carve/logs/job");
  const long logs = PairAt(argv, "--bind", "/srv/carve/logs/job/copy-0");
  EXPECT_GT(parent, hide);
  EXPECT_LT(parent, logs);
  EXPECT_EQ(argv[static_cast<size_t>(parent) - 1], "0755");
}

TEST(SandboxArgv, HidesTheDataDirThenBindsBackOnlyTheWorkloadsPaths) {
  auto argv = SandboxArgv(Spec(), kTools, {"sh"});
  const long root = PairAt(argv, "--ro-bind", "/");
  const long hide = PairAt(argv, "--tmpfs", "/srv/carve");
  const long logs = PairAt(argv, "--bind", "/srv/carve/logs/job/copy-0");
  const long model = PairAt(argv, "--ro-bind", "/srv/models/m");
  ASSERT_GE(root, 0);
  ASSERT_GT(hide, root);
  ASSERT_GT(logs, hide);
  ASSERT_GT(model, hide);
  EXPECT_GE(PairAt(argv, "--tmpfs", "/tmp"), 0);
}

TEST(SandboxArgv, UnsharesPidUtsIpcAndSessionButKeepsTheNetwork) {
  auto argv = SandboxArgv(Spec(), kTools, {"sh"});
  for (const char* flag : {"--unshare-pid", "--unshare-uts", "--unshare-ipc", "--new-session"}) {
    EXPECT_NE(std::find(argv.begin(), argv.end(), flag), argv.end()) << flag;
  }
  for (const char* flag : {"--unshare-net", "--unshare-all", "--share-net"}) {
    EXPECT_EQ(std::find(argv.begin(), argv.end(), flag), argv.end()) << flag;
  }
}

TEST(SandboxArgv, AnMpsShareKeepsTheHostIpc) {
  SandboxSpec s = Spec();
  s.private_ipc = false;
  auto argv = SandboxArgv(s, kTools, {"sh"});
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--unshare-ipc"), argv.end());
  EXPECT_EQ(PairAt(argv, "--tmpfs", "/dev/shm"), -1);
}

TEST(SandboxArgv, AnInterposerShareSeesHostPids) {
  SandboxSpec s = Spec();
  s.private_pids = false;
  auto argv = SandboxArgv(s, kTools, {"sh"});
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--unshare-pid"), argv.end());
  EXPECT_EQ(PairAt(argv, "--proc", "/proc"), -1);
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--unshare-ipc"), argv.end());
}

TEST(SandboxArgv, TheCommandFollowsTheLastDoubleDashUnchanged) {
  const std::vector<std::string> cmd = {"--ro-bind", "/", "/x", "--"};
  auto argv = SandboxArgv(Spec(), kTools, cmd);
  ASSERT_GT(argv.size(), cmd.size());
  EXPECT_EQ(argv[argv.size() - cmd.size() - 1], "--");
  EXPECT_EQ(argv[argv.size() - cmd.size() - 2], "--bounding-set=-all");
  EXPECT_EQ(std::vector<std::string>(argv.end() - static_cast<long>(cmd.size()), argv.end()), cmd);
}

TEST(ParseSandboxMode, AcceptsTheThreeModesOnly) {
  EXPECT_EQ(*ParseSandboxMode("auto"), SandboxMode::kAuto);
  EXPECT_EQ(*ParseSandboxMode("required"), SandboxMode::kRequired);
  EXPECT_EQ(*ParseSandboxMode("off"), SandboxMode::kOff);
  auto bad = ParseSandboxMode("yes");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
}

TEST(ProbeSandbox, NamesBwrapWhenItIsMissing) {
  if (::geteuid() != 0) GTEST_SKIP() << "the probe asks for root first";
  auto probe = ProbeSandbox("/nonexistent", 200000);
  ASSERT_FALSE(probe.has_value());
  EXPECT_NE(probe.error().message.find("bubblewrap"), std::string::npos) << probe.error().message;
}

}  // namespace
}  // namespace carve::launch
