#include "agent/launch/process_launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

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

// carve ignores SIGPIPE (cli/main.cc), and an ignored signal stays ignored across exec: a
// workload must start with the default, or `yes | head` would never end.
TEST(ProcessLauncher, AChildDoesNotInheritTheAgentsIgnoredSigpipe) {
  struct sigaction before {};
  ::sigaction(SIGPIPE, nullptr, &before);
  ::signal(SIGPIPE, SIG_IGN);
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  // SigIgn is the mask of ignored signals in hex; SIGPIPE (13) is bit 12.
  auto p = launcher.Start(Shell(dir, "grep SigIgn /proc/self/status"));
  ::sigaction(SIGPIPE, &before, nullptr);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  std::optional<int> status;
  ASSERT_TRUE(Eventually([&] { return (status = launcher.TryWait(*p)).has_value(); }));
  ASSERT_EQ(*status, 0);
  const std::string line = TailFile(dir + "/out.log", 1).value();
  ASSERT_EQ(line.rfind("SigIgn:", 0), 0u) << line;
  const uint64_t ignored = std::stoull(line.substr(7), nullptr, 16);
  EXPECT_EQ(ignored & (uint64_t{1} << (SIGPIPE - 1)), 0u) << line;
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

// The record hook runs while the process exists but has not run the program, so the caller's
// pid file is on disk before any of the copy's work begins.
TEST(ProcessLauncher, RecordsTheProcessBeforeTheProgramRuns) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  LaunchRequest r = Shell(dir, "touch " + dir + "/ran");
  std::optional<ProcessId> recorded;
  bool ran_before_record = true;
  r.record = [&](const ProcessId& p) {
    std::this_thread::sleep_for(100ms);  // time enough for a child that did not wait to run
    ran_before_record = std::filesystem::exists(dir + "/ran");
    recorded = p;
    return OkStatus();
  };
  auto p = launcher.Start(r);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_EQ(recorded, *p);
  EXPECT_FALSE(ran_before_record);
  std::optional<int> status;
  ASSERT_TRUE(Eventually([&] { return (status = launcher.TryWait(*p)).has_value(); }));
  EXPECT_EQ(*status, 0);
  EXPECT_TRUE(std::filesystem::exists(dir + "/ran"));
}

// A process that could not be recorded never runs the program: Start fails with the hook's error
// and nothing is left alive.
TEST(ProcessLauncher, AProcessThatCannotBeRecordedNeverRuns) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  LaunchRequest r = Shell(dir, "touch " + dir + "/ran");
  std::optional<ProcessId> recorded;
  r.record = [&](const ProcessId& p) {
    recorded = p;
    return Internal("disk full");
  };
  auto p = launcher.Start(r);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().message, "disk full");
  ASSERT_TRUE(recorded.has_value());
  EXPECT_FALSE(launcher.Alive(*recorded));
  EXPECT_EQ(::kill(recorded->pid, 0), -1) << "the child was not reaped";
  EXPECT_FALSE(std::filesystem::exists(dir + "/ran"));
}

// A name holding '=' ("LD_PRELOAD=/tmp/x.so:") would set another variable than the one named,
// ahead of the one the binding sets; a NUL would cut the entry short. Both are refused before
// anything starts.
TEST(ProcessLauncher, RefusesVariablesExecCannotCarryFaithfully) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  for (const EnvVars& bad : {EnvVars{{"LD_PRELOAD=/tmp/x.so:", "1"}}, EnvVars{{"", "1"}},
                             EnvVars{{std::string("A\0B", 3), "1"}},
                             EnvVars{{"A", std::string("1\0"
                                                       "2",
                                                       3)}}}) {
    LaunchRequest r = Shell(dir, "touch " + dir + "/ran");
    r.env.insert(r.env.end(), bad.begin(), bad.end());
    auto p = launcher.Start(r);
    ASSERT_FALSE(p.has_value()) << bad[0].first;
    EXPECT_EQ(p.error().code, ErrorCode::kInvalidArgument);
  }
  LaunchRequest r = Shell(dir, "touch " + dir + "/ran");
  r.argv.push_back(std::string("x\0y", 3));
  EXPECT_EQ(launcher.Start(r).error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(dir + "/ran"));
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

int ReadPid(const std::string& path) {
  std::ifstream in(path);
  int pid = 0;
  in >> pid;
  return pid;
}

TEST(ProcessLauncher, EveryProcessCarriesItsLeadersLaunchId) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  LaunchRequest r = Shell(dir, "echo $CARVE_LAUNCH_ID; sh -c 'echo $CARVE_LAUNCH_ID'");
  r.env.push_back({"CARVE_LAUNCH_ID", "forged"});  // a request cannot set it
  auto p = launcher.Start(r).value();
  ASSERT_TRUE(Eventually([&] { return launcher.TryWait(p).has_value(); }));
  const std::string id = std::to_string(p.pid) + "-" + std::to_string(p.start_time);
  EXPECT_EQ(TailFile(dir + "/out.log", 10).value(), id + "\n" + id + "\n");
}

// A child that calls setsid() leaves the process group; it still carries the launch id, and
// Stop reaches it (and, since it ignores SIGTERM, kills it after the grace period).
TEST(ProcessLauncher, StopReachesADescendantThatLeftTheGroupWithSetsid) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  auto p = launcher
               .Start(Shell(dir, "setsid sh -c 'trap \"\" TERM; echo $$ > " + dir +
                                     "/escaped; while :; do sleep 1; done' & wait"))
               .value();
  int escaped = 0;
  ASSERT_TRUE(Eventually([&] { return (escaped = ReadPid(dir + "/escaped")) > 0; }));
  ASSERT_NE(::getpgid(escaped), p.pid) << "the child did not leave the group";
  auto stopped = launcher.Stop(p, 300ms);
  ASSERT_TRUE(stopped.has_value()) << stopped.error().message;
  EXPECT_TRUE(LiveMembers(p).empty());
  EXPECT_FALSE(launcher.Alive({escaped, ProcessStartTime(escaped)}))
      << "pid " << escaped << " outlived Stop";
}

// Only the launch id of this leader counts: a process carrying another one is left alone.
TEST(ProcessLauncher, LiveMembersIgnoresAnotherWorkloadsProcesses) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  auto a = launcher.Start(Shell(dir, "sleep 30")).value();
  auto b = launcher.Start(Shell(dir, "setsid sleep 30 & wait")).value();
  ASSERT_TRUE(Eventually([&] { return LiveMembers(b).size() == 2; }));
  const std::vector<int> of_a = LiveMembers(a);
  ASSERT_FALSE(of_a.empty());
  for (int pid : LiveMembers(b)) {
    EXPECT_EQ(std::count(of_a.begin(), of_a.end(), pid), 0) << pid << " counted in both";
  }
  ASSERT_TRUE(launcher.Stop(b, 2s).has_value());
  EXPECT_TRUE(launcher.Alive(a));
  ASSERT_TRUE(launcher.Stop(a, 2s).has_value());
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
