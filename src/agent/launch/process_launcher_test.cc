#include "agent/launch/process_launcher.h"

#include <gtest/gtest.h>

#include "agent/launch/test_util.h"
#include "agent/launch/workload_logs.h"

namespace carve::launch {
namespace {

using testing::Eventually;
using testing::Shell;
using testing::TempDir;
using namespace std::chrono_literals;

TEST(ProcessLauncher, PassesTheEnvironmentAndCapturesStdoutAndStderr) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  LaunchRequest r = Shell(dir, "echo out=$CARVE_X; echo err >&2; pwd");
  r.env.push_back({"CARVE_X", "42"});
  r.work_dir = dir;
  auto p = launcher.Start(r);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  std::optional<int> status;
  ASSERT_TRUE(Eventually([&] { return (status = launcher.TryWait(*p)).has_value(); }));
  EXPECT_EQ(*status, 0);
  EXPECT_EQ(TailFile(dir + "/out.log", 10).value(), "out=42\n" + dir + "\n");
  EXPECT_EQ(TailFile(dir + "/err.log", 10).value(), "err\n");
}

TEST(ProcessLauncher, ReportsTheExitStatus) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  auto p = launcher.Start(Shell(dir, "exit 3")).value();
  std::optional<int> status;
  ASSERT_TRUE(Eventually([&] { return (status = launcher.TryWait(p)).has_value(); }));
  EXPECT_EQ(*status, 3);
}

TEST(ProcessLauncher, AMissingProgramIsNotFound) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  LaunchRequest r = Shell(dir, "");
  r.argv = {"/nonexistent/carve-no-such-program"};
  auto p = launcher.Start(r);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code, ErrorCode::kNotFound);
  EXPECT_NE(p.error().message.find("carve-no-such-program"), std::string::npos);
}

TEST(ProcessLauncher, StartsEachProcessAsItsOwnGroupLeader) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  auto p = launcher.Start(Shell(dir, "sleep 30")).value();
  EXPECT_EQ(::getpgid(p.pid), p.pid);
  EXPECT_NE(p.start_time, 0u);
  EXPECT_TRUE(launcher.Alive(p));
  ASSERT_TRUE(launcher.Stop(p, 2s).has_value());
}

// The shell forks two sleeps; stopping the copy leaves none of them behind.
TEST(ProcessLauncher, StopLeavesNoGrandchildrenBehind) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  auto p = launcher.Start(Shell(dir, "sleep 60 & sleep 60 & wait")).value();
  ASSERT_TRUE(Eventually([&] { return LiveGroupMembers(p.pid).size() == 3; }));
  auto stopped = launcher.Stop(p, 2s);
  ASSERT_TRUE(stopped.has_value()) << stopped.error().message;
  EXPECT_TRUE(LiveGroupMembers(p.pid).empty());
  EXPECT_FALSE(launcher.Alive(p));
  EXPECT_EQ(stopped->value_or(-1), 128 + SIGTERM);
}

// A process that ignores SIGTERM is killed once the grace period ends.
TEST(ProcessLauncher, StopEscalatesToSigkillAfterTheGracePeriod) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  auto p = launcher.Start(Shell(dir, "trap '' TERM; sleep 60 & wait; wait")).value();
  ASSERT_TRUE(Eventually([&] { return LiveGroupMembers(p.pid).size() == 2; }));
  const auto t0 = std::chrono::steady_clock::now();
  auto stopped = launcher.Stop(p, 200ms);
  ASSERT_TRUE(stopped.has_value()) << stopped.error().message;
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 200ms);
  EXPECT_TRUE(LiveGroupMembers(p.pid).empty());
  EXPECT_EQ(stopped->value_or(-1), 128 + SIGKILL);
}

TEST(ProcessLauncher, AliveRejectsAPidWithAnotherStartTime) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  auto p = launcher.Start(Shell(dir, "sleep 30")).value();
  EXPECT_FALSE(launcher.Alive({p.pid, p.start_time + 1}));
  ASSERT_TRUE(launcher.Stop(p, 2s).has_value());
}

}  // namespace
}  // namespace carve::launch
