#include "agent/node/fence.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

#include "agent/launch/pid_file.h"
#include "agent/launch/process_launcher.h"
#include "agent/launch/test_util.h"

namespace carve::agent::node {
namespace {

using namespace std::chrono_literals;
using launch::testing::Eventually;

// The fence must act before the server can move anything: NotReady comes at the earliest
// node_timeout - heartbeat after the agent froze, and the watchdog needs a poll and its grace.
TEST(FenceAfter, FencesBeforeTheServerCanDeclareTheNodeLost) {
  for (auto [timeout, heartbeat] :
       {std::pair{3000ms, 300ms}, std::pair{15000ms, 2000ms}, std::pair{4000ms, 300ms}}) {
    const auto after = FenceAfter(timeout, heartbeat);
    EXPECT_LT(after + 100ms + 500ms, timeout - heartbeat) << timeout.count();
    EXPECT_GE(after, 300ms);
  }
  EXPECT_EQ(FenceAfter(500ms, 300ms), 300ms);
}

struct Node {
  std::string dir = launch::testing::TempDir();
  launch::ProcessLauncher launcher;

  launch::ProcessId StartWorkload(const std::string& name) {
    auto p = launcher.Start(launch::testing::Shell(dir, "trap '' TERM; sleep 60 & wait")).value();
    std::filesystem::create_directories(dir + "/workloads/" + name);
    EXPECT_TRUE(launch::WritePidFile(dir + "/workloads/" + name + "/pid", {p, 0, {}}).ok());
    return p;
  }
  std::future<int> Watch() {
    FenceWatchOptions o;
    o.data_dir = dir;
    o.agent_pid = ::getpid();
    o.poll = 20ms;
    o.stop_grace = 100ms;
    return std::async(std::launch::async, [o] { return RunFenceWatchdog(o); });
  }
};

// While the agent beats, its workloads run; once it stops beating for longer than the fence
// delay, the watchdog stops every one of them, SIGTERM-proof children included.
TEST(Fence, StopsEveryWorkloadOnceTheBeatStops) {
  Node node;
  auto beat = FenceBeat::Create(node.dir + "/fence").value();
  beat->Arm(300ms);
  const auto a = node.StartWorkload("a");
  const auto b = node.StartWorkload("b");
  auto watchdog = node.Watch();
  const auto until = std::chrono::steady_clock::now() + 800ms;
  while (std::chrono::steady_clock::now() < until) {
    beat->Beat();
    std::this_thread::sleep_for(20ms);  // the agent's beat period, not a wait
  }
  EXPECT_TRUE(node.launcher.Alive(a) && node.launcher.Alive(b)) << "fenced while beating";
  EXPECT_EQ(beat->fenced(), 0);
  ASSERT_TRUE(Eventually([&] { return beat->fenced() == 2; }));
  EXPECT_TRUE(launch::LiveMembers(a).empty());
  EXPECT_TRUE(launch::LiveMembers(b).empty());
  beat->StandDown();
  EXPECT_EQ(watchdog.get(), 0);
  (void)node.launcher.TryWait(a);
  (void)node.launcher.TryWait(b);
}

// A clean agent stop stands the watchdog down: it exits and its workloads keep running (the
// next agent adopts them).
TEST(Fence, AStoodDownWatchdogLeavesTheWorkloadsRunning) {
  Node node;
  auto beat = FenceBeat::Create(node.dir + "/fence").value();
  beat->Arm(200ms);
  const auto a = node.StartWorkload("a");
  auto watchdog = node.Watch();
  beat->StandDown();
  EXPECT_EQ(watchdog.get(), 0);
  std::this_thread::sleep_for(400ms);  // past the fence delay: nothing may act any more
  EXPECT_TRUE(node.launcher.Alive(a));
  EXPECT_EQ(beat->fenced(), 0);
  ASSERT_TRUE(node.launcher.Stop(a, 100ms).has_value());
}

// Not armed (the agent never registered, so it does not know the node timeout): no fence.
TEST(Fence, AnUnarmedFenceNeverFires) {
  Node node;
  auto beat = FenceBeat::Create(node.dir + "/fence").value();
  const auto a = node.StartWorkload("a");
  auto watchdog = node.Watch();
  std::this_thread::sleep_for(500ms);  // silence far longer than any fence delay
  EXPECT_TRUE(node.launcher.Alive(a));
  beat->StandDown();
  EXPECT_EQ(watchdog.get(), 0);
  ASSERT_TRUE(node.launcher.Stop(a, 100ms).has_value());
}

TEST(Fence, AWatchdogWithoutItsFileFails) {
  FenceWatchOptions o;
  o.data_dir = launch::testing::TempDir();
  o.agent_pid = ::getpid();
  EXPECT_EQ(RunFenceWatchdog(o), 2);
}

}  // namespace
}  // namespace carve::agent::node
