// WorkloadManager: a restarted agent adopting copies, waiting for their partitions, and what
// happens to one that exits or is no longer desired first. The fixture:
// workload_manager_test_fixture.h.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "agent/node/workload_manager_test_fixture.h"

namespace carve::agent::node {
namespace {

TEST_F(WorkloadManagerTest, ACopyWaitsForItsPartitionToBeCarved) {
  auto w = ShellCopy("acct/ic-test/9", "exec sleep 30");
  w.device.gpus = {0};
  w.device.partition_start = 0;
  Apply({w});  // No GPU entry yet.
  EXPECT_EQ(Find(w.id)->state, protocol::WorkloadState::kStarting);
  EXPECT_EQ(Find(w.id)->pid, 0);
  EXPECT_NE(Find(w.id)->message.find("waiting for the partition at slice 0 of GPU 0"),
            std::string::npos);
  gpu_desired_ = {{0, true, {{"7g.40gb", 0}}}};
  Apply({w});
  EXPECT_GT(Find(w.id)->pid, 0);
  EXPECT_EQ(Manager().BusyGpus().at(0), std::vector<std::string>{w.id});
}

// The first pass of a restarted agent adopts before the GPU applier has applied any layout, so a
// copy's partition cannot be bound yet: the copy waits for it and then adopts the same process,
// never starting a second one.
TEST_F(WorkloadManagerTest, ARestartedAgentAdoptsACopyOnAPartitionOnceItIsCarved) {
  gpu_desired_ = {{0, true, {{"7g.40gb", 0}}}};
  auto w = ShellCopy("acct/ic-test/10", "exec sleep 30");
  w.device.gpus = {0};
  w.device.partition_start = 0;
  Apply({w});
  const int pid = Find(w.id)->pid;
  ASSERT_GT(pid, 0);
  RestartAgent();
  ASSERT_TRUE(ProcessExists(pid));

  Apply({w});
  auto s = Find(w.id);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, pid);
  EXPECT_EQ(s->state, protocol::WorkloadState::kRunning);
  EXPECT_EQ(launch::ReadPidFile(dir_ + "/data/workloads/" + WorkloadDirName(w.id) + "/pid")
                ->value()
                .process.pid,
            pid);
  EXPECT_TRUE(HasEvent(Manager().TakeEvents(), "adopted"));
  Apply({w});
  EXPECT_EQ(Find(w.id)->pid, pid);
}

// While its partition is not carved, an adopted copy that stops being desired is stopped.
TEST_F(WorkloadManagerTest, ACopyWaitingToBeAdoptedIsStoppedWhenNoLongerDesired) {
  gpu_desired_ = {{0, true, {{"7g.40gb", 0}}}};
  auto w = ShellCopy("acct/ic-test/11", "exec sleep 30");
  w.device.gpus = {0};
  w.device.partition_start = 0;
  Apply({w});
  const int pid = Find(w.id)->pid;
  ASSERT_GT(pid, 0);
  RestartAgent();
  gpu_desired_.clear();  // The layout does not come: the copy keeps waiting for its partition.
  Apply({w});
  EXPECT_EQ(Find(w.id)->state, protocol::WorkloadState::kStarting);
  ASSERT_TRUE(ProcessExists(pid));

  Apply({});
  EXPECT_TRUE(Eventually([&] { return !ProcessExists(pid); }));
  EXPECT_FALSE(Find(w.id).has_value());
}

// A clean stop stops the process of an earlier agent that was not adopted yet, too.
TEST_F(WorkloadManagerTest, StopAllStopsACopyWaitingToBeAdopted) {
  gpu_desired_ = {{0, true, {{"7g.40gb", 0}}}};
  auto w = ShellCopy("acct/ic-test/12", "exec sleep 30");
  w.device.gpus = {0};
  w.device.partition_start = 0;
  Apply({w});
  const int pid = Find(w.id)->pid;
  ASSERT_GT(pid, 0);
  RestartAgent();
  gpu_desired_.clear();
  Apply({w});
  ASSERT_TRUE(ProcessExists(pid));

  Manager().StopAll();
  EXPECT_TRUE(Eventually([&] { return !ProcessExists(pid); }));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/data/workloads/" + WorkloadDirName(w.id)));
}

// An adopted process that exits while it waits for its partition is started again, once.
TEST_F(WorkloadManagerTest, ACopyThatExitsBeforeItIsAdoptedIsStartedAgain) {
  gpu_desired_ = {{0, true, {{"7g.40gb", 0}}}};
  auto w = ShellCopy("acct/ic-test/13", "exec sleep 30");
  w.device.gpus = {0};
  w.device.partition_start = 0;
  Apply({w});
  const int pid = Find(w.id)->pid;
  ASSERT_GT(pid, 0);
  RestartAgent();
  auto desired = gpu_desired_;
  gpu_desired_.clear();
  Apply({w});
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);  // Still this test's child: reaped here.
  gpu_desired_ = desired;
  Apply({w});
  auto s = Find(w.id);
  ASSERT_TRUE(s.has_value());
  EXPECT_GT(s->pid, 0);
  EXPECT_NE(s->pid, pid);
  EXPECT_TRUE(HasEvent(Manager().TakeEvents(), "exited before it was adopted"));
}

}  // namespace
}  // namespace carve::agent::node
