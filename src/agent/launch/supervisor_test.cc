#include "agent/launch/supervisor.h"

#include <gtest/gtest.h>

#include <fstream>

#include "agent/launch/process_launcher.h"
#include "agent/launch/test_util.h"
#include "common/fake_clock.h"

namespace carve::launch {
namespace {

using testing::Eventually;
using testing::Shell;
using testing::TempDir;
using namespace std::chrono_literals;

struct Fixture {
  std::string dir = TempDir();
  ProcessLauncher launcher;
  FakeClock clock;
  std::vector<SupervisorEvent> events;
  Supervisor Make(const std::string& script, RestartRules rules) {
    return Supervisor("ic-a/0", launcher, clock, Shell(dir, script), rules,
                      [this](const SupervisorEvent& e) { events.push_back(e); });
  }
  // Polls (without moving the fake clock) until the supervisor leaves kRunning.
  bool PollUntilExit(Supervisor& s) {
    return Eventually([&] {
      (void)s.Poll();
      return s.state() != CopyState::kRunning;
    });
  }
};

TEST(Supervisor, RestartsACrashedCopyAfterBackoff) {
  Fixture f;
  Supervisor s = f.Make("exit 3", {});
  ASSERT_TRUE(s.Start().ok());
  const int first_pid = s.process()->pid;
  ASSERT_TRUE(f.PollUntilExit(s));
  EXPECT_EQ(s.state(), CopyState::kBackoff);
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_EQ(f.events[0].message, "copy ic-a/0 exited with status 3, restarting in 1000 ms");
  f.clock.Advance(999ms);
  ASSERT_TRUE(s.Poll().ok());
  EXPECT_EQ(s.state(), CopyState::kBackoff);  // not yet
  f.clock.Advance(1ms);
  ASSERT_TRUE(s.Poll().ok());
  EXPECT_EQ(s.restarts(), 1);
  ASSERT_TRUE(s.process().has_value());
  EXPECT_NE(s.process()->pid, first_pid);
}

TEST(Supervisor, BackoffDoublesForConsecutiveCrashesUpToTheCap) {
  Fixture f;
  Supervisor s = f.Make("exit 1", {RestartPolicy::kAlways, -1, 100ms, 300ms, 60s});
  ASSERT_TRUE(s.Start().ok());
  std::vector<int64_t> waits;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(f.PollUntilExit(s));
    waits.push_back(f.events.back().restart_in->count());
    f.clock.Advance(*f.events.back().restart_in);
    ASSERT_TRUE(s.Poll().ok());
  }
  EXPECT_EQ(waits, (std::vector<int64_t>{100, 200, 300, 300}));
}

TEST(Supervisor, JobTaskThatMustNotRestartKeepsItsExitCode) {
  Fixture f;
  Supervisor s = f.Make("exit 7", {RestartPolicy::kNever});
  ASSERT_TRUE(s.Start().ok());
  ASSERT_TRUE(f.PollUntilExit(s));
  EXPECT_EQ(s.state(), CopyState::kFailed);
  EXPECT_EQ(s.exit_codes(), std::vector<int>{7});
  f.clock.Advance(1h);
  ASSERT_TRUE(s.Poll().ok());
  EXPECT_EQ(s.restarts(), 0);
  EXPECT_FALSE(f.events.back().restart_in.has_value());
}

TEST(Supervisor, OnFailureStopsAfterMaxRetries) {
  Fixture f;
  Supervisor s = f.Make("exit 2", {RestartPolicy::kOnFailure, 1, 10ms});
  ASSERT_TRUE(s.Start().ok());
  ASSERT_TRUE(f.PollUntilExit(s));
  f.clock.Advance(10ms);
  ASSERT_TRUE(s.Poll().ok());
  ASSERT_TRUE(f.PollUntilExit(s));
  EXPECT_EQ(s.state(), CopyState::kFailed);
  EXPECT_EQ(s.exit_codes(), (std::vector<int>{2, 2}));
  EXPECT_NE(f.events.back().message.find("1 retries used"), std::string::npos);
}

TEST(Supervisor, OnFailureDoesNotRestartASuccessfulTask) {
  Fixture f;
  Supervisor s = f.Make("exit 0", {RestartPolicy::kOnFailure, 5});
  ASSERT_TRUE(s.Start().ok());
  ASSERT_TRUE(f.PollUntilExit(s));
  EXPECT_EQ(s.state(), CopyState::kSucceeded);
}

TEST(Supervisor, StopDoesNotRestart) {
  Fixture f;
  Supervisor s = f.Make("sleep 60", {});
  ASSERT_TRUE(s.Start().ok());
  const int pid = s.process()->pid;
  ASSERT_TRUE(s.Stop(2s).ok());
  EXPECT_EQ(s.state(), CopyState::kStopped);
  EXPECT_TRUE(LiveGroupMembers(pid).empty());
  f.clock.Advance(1h);
  ASSERT_TRUE(s.Poll().ok());
  EXPECT_FALSE(s.process().has_value());
}

TEST(Supervisor, NoticesTheDeathOfAnAdoptedProcess) {
  Fixture f;
  ProcessLauncher other;
  auto p = other.Start(Shell(f.dir, "sleep 60")).value();
  Supervisor s = f.Make("sleep 60", {});
  s.Adopt(p);
  ASSERT_TRUE(s.Poll().ok());
  EXPECT_EQ(s.state(), CopyState::kRunning);
  ASSERT_TRUE(other.Stop(p, 2s).has_value());
  ASSERT_TRUE(f.PollUntilExit(s));
  EXPECT_EQ(f.events.back().exit_status, -1);
  EXPECT_EQ(s.state(), CopyState::kBackoff);
  ASSERT_TRUE(s.Stop(2s).ok());
}

// The leader exits but leaves a child in its group: the child is stopped before the restart,
// so two runs of the copy never overlap.
TEST(Supervisor, WhatAnExitedLeaderLeftBehindIsStoppedBeforeTheRestart) {
  Fixture f;
  RestartRules rules;
  rules.leftover_grace = 200ms;
  Supervisor s = f.Make("trap '' TERM; sleep 60 & echo $! > " + f.dir + "/child; exit 3", rules);
  ASSERT_TRUE(s.Start().ok());
  const ProcessId leader = *s.process();
  ASSERT_TRUE(f.PollUntilExit(s));
  EXPECT_EQ(s.state(), CopyState::kBackoff);
  int child = 0;
  std::ifstream(f.dir + "/child") >> child;
  ASSERT_GT(child, 0);
  EXPECT_FALSE(f.launcher.Alive({child, ProcessStartTime(child)})) << "child " << child;
  EXPECT_TRUE(LiveMembers(leader).empty());
}

}  // namespace
}  // namespace carve::launch
