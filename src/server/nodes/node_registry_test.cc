#include "server/nodes/node_registry.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "catalog/catalog.h"
#include "common/fake_clock.h"
#include "server/nodes/agent_node_driver.h"
#include "store/fake_store.h"

namespace carve::server::nodes {
namespace {

using namespace std::chrono_literals;

protocol::Registration P4d(const std::string& id) {
  protocol::Registration r;
  r.node_id = id;
  r.instance_type = "ml.p4d.24xlarge";
  r.driver = "sim";
  for (int i = 0; i < 8; ++i) {
    protocol::GpuInventory g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    r.gpus.push_back(g);
  }
  return r;
}

class NodeRegistryTest : public ::testing::Test {
 protected:
  NodeRegistryOptions Options() {
    NodeRegistryOptions o;
    o.clock = &clock_;
    o.node_timeout = 10s;
    return o;
  }
  static protocol::WorkloadDesired Placed(const std::string& id) {
    protocol::WorkloadDesired w;
    w.id = id;
    w.kind = protocol::WorkloadKind::kCopy;
    w.name = "ic";
    return w;
  }
  static protocol::WorkloadStatus Running(const std::string& id, const std::string& address) {
    protocol::WorkloadStatus w;
    w.id = id;
    w.state = protocol::WorkloadState::kRunning;
    w.address = address;
    return w;
  }
  protocol::StatusReport Report(const std::string& node) {
    protocol::StatusReport s;
    s.node_id = node;
    s.epoch = registry_.epoch();
    return s;
  }
  FakeClock clock_;
  store::FakeStore store_{clock_};
  NodeRegistry registry_{store_, Options()};
};

TEST_F(NodeRegistryTest, RegistrationNamesAnUnknownInstanceTypeAndAWrongGpuCount) {
  auto bad = P4d("a");
  bad.instance_type = "ml.nothing.large";
  auto r = registry_.Register(bad);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("ml.nothing.large"), std::string::npos);
  auto short_node = P4d("b");
  short_node.gpus.pop_back();
  r = registry_.Register(short_node);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("has 8 GPUs but the agent found 7"), std::string::npos);
  EXPECT_TRUE(registry_.Nodes().empty());
}

TEST_F(NodeRegistryTest, ARegisteredNodeSurvivesARestartWithOneTimeoutOfGrace) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  EXPECT_TRUE(registry_.IsReady(NodeId("a")));
  NodeRegistry restarted(store_, Options());
  ASSERT_TRUE(restarted.Recover().ok());
  auto view = restarted.Node(NodeId("a"));
  ASSERT_TRUE(view.has_value());
  EXPECT_TRUE(view->ready);
  EXPECT_FALSE(view->connected);
  clock_.Advance(29s);  // The recovery grace (30 s) exceeds the node timeout (10 s).
  EXPECT_TRUE(restarted.Sweep().empty());
  clock_.Advance(2s);
  EXPECT_EQ(restarted.Sweep().size(), 1u);
  EXPECT_FALSE(restarted.IsReady(NodeId("a")));
  EXPECT_EQ(view->registration.instance_type, "ml.p4d.24xlarge");
  EXPECT_NE(restarted.epoch(), registry_.epoch());
  // Its agent's next report carries the old epoch: it is told to register again.
  auto stale = Report("a");
  stale.epoch = registry_.epoch();
  EXPECT_TRUE(restarted.ReportStatus(stale).reregister);
}

TEST_F(NodeRegistryTest, LongPollAnswersWhenTheDesiredStateChanges) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  auto first = registry_.WaitDesired("a", registry_.epoch(), 0, 0ms);
  ASSERT_TRUE(first.has_value());
  auto waiter = std::async(std::launch::async, [&] {
    return registry_.WaitDesired("a", registry_.epoch(), first->version, 5s);
  });
  EXPECT_EQ(waiter.wait_for(50ms), std::future_status::timeout);
  protocol::WorkloadDesired w;
  w.id = "acct/ic/1";
  registry_.SetWorkloads("sagemaker", NodeId("a"), {w});
  auto got = waiter.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_GT(got->version, first->version);
  ASSERT_EQ(got->workloads.size(), 1u);
  EXPECT_EQ(got->workloads[0].id, "acct/ic/1");
  // The same list again changes nothing; another source's list is added to it.
  registry_.SetWorkloads("sagemaker", NodeId("a"), {w});
  EXPECT_EQ(registry_.WaitDesired("a", registry_.epoch(), 0, 0ms)->version, got->version);
  protocol::WorkloadDesired task;
  task.id = "acct/q/job/0";
  registry_.SetWorkloads("queues", NodeId("a"), {task});
  EXPECT_EQ(registry_.WaitDesired("a", registry_.epoch(), 0, 0ms)->workloads.size(), 2u);
  registry_.RetainWorkloadNodes("queues", {});
  EXPECT_EQ(registry_.WaitDesired("a", registry_.epoch(), 0, 0ms)->workloads.size(), 1u);
}

// The logs an agent keeps past their workloads: listed per source, one new version per change.
TEST_F(NodeRegistryTest, KeptLogsAreListedPerSourceAndAChangeIsANewVersion) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  auto first = registry_.WaitDesired("a", registry_.epoch(), 0, 0ms);
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->logs_listed);  // This server lists them, even when it keeps none.
  EXPECT_TRUE(first->kept_logs.empty());
  registry_.SetKeptLogs("queues", NodeId("a"), {"acct/q/job-1/0", "acct/q/job-2/0"});
  auto kept = registry_.WaitDesired("a", registry_.epoch(), 0, 0ms);
  EXPECT_GT(kept->version, first->version);
  EXPECT_EQ(kept->kept_logs, (std::vector<std::string>{"acct/q/job-1/0", "acct/q/job-2/0"}));
  registry_.SetKeptLogs("queues", NodeId("a"), {"acct/q/job-1/0", "acct/q/job-2/0"});
  EXPECT_EQ(registry_.WaitDesired("a", registry_.epoch(), 0, 0ms)->version, kept->version);
  registry_.SetKeptLogs("queues", NodeId("a"), {});
  auto none = registry_.WaitDesired("a", registry_.epoch(), 0, 0ms);
  EXPECT_GT(none->version, kept->version);
  EXPECT_TRUE(none->kept_logs.empty());
  registry_.SetKeptLogs("queues", NodeId("zz"), {"x"});  // An unknown node: nothing happens.
}

TEST_F(NodeRegistryTest, AnotherEpochAnswersAtOnce) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  auto d = registry_.WaitDesired("a", "old-epoch", 1'000'000, 5s);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->epoch, registry_.epoch());
  EXPECT_FALSE(registry_.WaitDesired("zz", registry_.epoch(), 0, 0ms).has_value());
}

TEST_F(NodeRegistryTest, SilenceMakesANodeNotReadyAndAReportMakesItReady) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  int notified = 0;
  const auto subscription = registry_.AddListener([&] { ++notified; });
  clock_.Advance(9s);
  EXPECT_TRUE(registry_.Sweep().empty());
  clock_.Advance(2s);
  auto lost = registry_.Sweep();
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0], NodeId("a"));
  EXPECT_FALSE(registry_.IsReady(NodeId("a")));
  EXPECT_NE(registry_.Node(NodeId("a"))->not_ready_reason.find("no status report for 11 s"),
            std::string::npos);
  EXPECT_EQ(notified, 1);
  EXPECT_FALSE(registry_.ReportStatus(Report("a")).reregister);
  EXPECT_TRUE(registry_.IsReady(NodeId("a")));
  EXPECT_EQ(notified, 2);
}

// A service destroyed before the registry (a restart in one process) must not be woken: its
// subscription's end detaches the listener, and the registry forgets it.
TEST_F(NodeRegistryTest, AListenerIsNeverCalledOnceItsSubscriptionEnds) {
  int first = 0;
  int second = 0;
  auto a = registry_.AddListener([&] { ++first; });
  {
    const auto b = registry_.AddListener([&] { ++second; });
    ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  }
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
  ASSERT_TRUE(registry_.Register(P4d("b")).has_value());
  EXPECT_EQ(first, 2);
  EXPECT_EQ(second, 1);
  auto moved = std::move(a);  // Moving keeps it subscribed; Reset ends it.
  ASSERT_TRUE(registry_.Register(P4d("c")).has_value());
  EXPECT_EQ(first, 3);
  moved.Reset();
  ASSERT_TRUE(registry_.Register(P4d("d")).has_value());
  EXPECT_EQ(first, 3);
}

TEST_F(NodeRegistryTest, WorkloadStatusIsFoundByIdAcrossNodes) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  ASSERT_TRUE(registry_.Register(P4d("b")).has_value());
  registry_.SetWorkloads("test", NodeId("b"), {Placed("acct/ic/7")});
  auto s = Report("b");
  protocol::WorkloadStatus w7;
  w7.id = "acct/ic/7";
  w7.state = protocol::WorkloadState::kRunning;
  w7.pid = 42;
  w7.port = 5000;
  w7.address = "127.0.0.1:5000";
  s.workloads.push_back(w7);
  registry_.ReportStatus(s);
  auto w = registry_.Workload("acct/ic/7");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->state, protocol::WorkloadState::kRunning);
  EXPECT_EQ(w->address, "127.0.0.1:5000");
  EXPECT_FALSE(registry_.Workload("acct/ic/8").has_value());
}

// The hijack a hostile node tried (docs/security.md, "Nodes"): node b reports node a's copy as
// running at b's own address. The copy stays a's, at a's address, and b's report of it is lost.
TEST_F(NodeRegistryTest, ANodeCannotSpeakForAWorkloadPlacedOnAnother) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  ASSERT_TRUE(registry_.Register(P4d("b")).has_value());
  registry_.SetWorkloads("test", NodeId("a"), {Placed("acct/ic/1")});
  auto honest = Report("a");
  honest.workloads.push_back(Running("acct/ic/1", "10.0.0.1:5000"));
  registry_.ReportStatus(honest);
  auto forged = Report("b");
  forged.workloads.push_back(Running("acct/ic/1", "10.6.6.6:6666"));
  auto failed = Running("acct/ic/2", "10.6.6.6:6667");  // Placed nowhere at all.
  failed.state = protocol::WorkloadState::kFailed;
  forged.workloads.push_back(failed);
  registry_.ReportStatus(forged);
  auto w = registry_.Workload("acct/ic/1");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->address, "10.0.0.1:5000");
  EXPECT_EQ(w->state, protocol::WorkloadState::kRunning);
  EXPECT_FALSE(registry_.Workload("acct/ic/2").has_value());
  // Even once a leaves, b's next report does not take the copy over.
  registry_.ReportStatus(Report("a"));
  registry_.ReportStatus(forged);
  EXPECT_FALSE(registry_.Workload("acct/ic/1").has_value());
}

TEST_F(NodeRegistryTest, ANodeStillReportsACopyThatLeftItsDesiredStateUntilItStops) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  registry_.SetWorkloads("test", NodeId("a"), {Placed("acct/ic/1")});
  auto s = Report("a");
  s.workloads.push_back(Running("acct/ic/1", "10.0.0.1:5000"));
  registry_.ReportStatus(s);
  registry_.SetWorkloads("test", NodeId("a"), {});  // Deleted: the agent is stopping it.
  s.workloads[0].state = protocol::WorkloadState::kStopped;
  registry_.ReportStatus(s);
  auto w = registry_.Workload("acct/ic/1");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->state, protocol::WorkloadState::kStopped);
}

TEST_F(NodeRegistryTest, LedgerGapComparesTheQuotaLedgerWithNvmlPerProcess) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  registry_.SetWorkloads("test", NodeId("a"),
                         {Placed("acct/q/job-1/task-0.0"), Placed("acct/ic/1")});
  auto s = Report("a");
  protocol::WorkloadStatus share;
  share.id = "acct/q/job-1/task-0.0";
  share.state = protocol::WorkloadState::kRunning;
  share.pid = 4242;
  share.memory_used_mib = 900;    // What the interposer's ledger counts.
  protocol::WorkloadStatus copy;  // No ledger (a MIG copy): not cross-checked.
  copy.id = "acct/ic/1";
  copy.pid = 77;
  s.workloads = {share, copy};
  protocol::GpuStatus g;
  g.index = 2;
  g.processes = {{4242, 1000}, {77, 5000}};  // NVML sees 100 MiB the ledger does not.
  s.gpus = {g};
  registry_.ReportStatus(s);
  auto gaps = registry_.LedgerGaps();
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].workload, "acct/q/job-1/task-0.0");
  EXPECT_EQ(gaps[0].ledger_mib, 900);
  EXPECT_EQ(gaps[0].nvml_mib, 1000);
  EXPECT_EQ(gaps[0].gap_mib, 100);
}

class CarveThroughAgentTest : public NodeRegistryTest {
 protected:
  core::Layout TwoPartitions() {
    auto gpu = catalog::FindGpu("a100-40gb");
    core::Layout l{*gpu, {}};
    l.instances.push_back({*catalog::FindProfile(**gpu, "4g.20gb"), 0});
    l.instances.push_back({*catalog::FindProfile(**gpu, "3g.20gb"), 4});
    return l;
  }
  // Plays the agent's long-poll: the desired state once it holds a GPU layout (a registered
  // node starts with none, and a carve's layout bumps its version).
  protocol::DesiredState DesiredLayout(const std::string& node) {
    auto d = registry_.WaitDesired(node, registry_.epoch(), 0, 0ms);
    EXPECT_TRUE(d.has_value());
    if (d.has_value() && d->gpus.empty()) {
      d = registry_.WaitDesired(node, registry_.epoch(), d->version, 5s);
    }
    EXPECT_TRUE(d.has_value() && !d->gpus.empty()) << "no layout was desired within 5 s";
    return d.value_or(protocol::DesiredState{});
  }
  // The agent's report of GPU `gpu`, acted on desired version `version`: applied as `carved`.
  void ReportApplied(uint64_t version, int gpu, std::vector<protocol::CarvedPartition> carved) {
    auto s = Report("a");
    s.applied_version = version;
    protocol::GpuStatus g;
    g.index = gpu;
    g.mig = true;
    g.applied = true;
    g.partitions = std::move(carved);
    s.gpus = {g};
    registry_.ReportStatus(s);
  }
  // Carves TwoPartitions on GPU 3 of node "a", whose agent reports `carved` as applied.
  Status CarveReportedAs(std::vector<protocol::CarvedPartition> carved) {
    EXPECT_TRUE(registry_.Register(P4d("a")).has_value());
    AgentNodeDriver driver(registry_, 30s);
    auto carve = std::async(std::launch::async, [&] {
      return driver.CarveGpu(NodeId("a"), GpuIndex(3), TwoPartitions());
    });
    protocol::DesiredState d = DesiredLayout("a");
    ReportApplied(d.version, 3, std::move(carved));
    // A refusal is prompt: it does not wait out the carve timeout (30 s).
    EXPECT_EQ(carve.wait_for(10s), std::future_status::ready) << "the carve waited for its timeout";
    return carve.get();
  }
};

// The agent says "applied" but carved something else: a carve that returned OK would place
// copies on partitions that do not exist. Every kind of difference is refused, naming both.
TEST_F(CarveThroughAgentTest, AnAppliedReportWithOtherStartsFailsTheCarve) {
  Status st = CarveReportedAs({{"4g.20gb", 0, "MIG-x"}, {"3g.20gb", 0, "MIG-y"}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.error().message.find("applied as [4g.20gb@0, 3g.20gb@0]"), std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("desired layout is [4g.20gb@0, 3g.20gb@4]"), std::string::npos)
      << st.error().message;
}

TEST_F(CarveThroughAgentTest, AnAppliedReportWithOtherProfilesFailsTheCarve) {
  Status st = CarveReportedAs({{"4g.20gb", 0, "MIG-x"}, {"2g.10gb", 4, "MIG-y"}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.error().message.find("applied as [4g.20gb@0, 2g.10gb@4]"), std::string::npos)
      << st.error().message;
}

TEST_F(CarveThroughAgentTest, AnAppliedReportMissingAPartitionFailsTheCarve) {
  Status st = CarveReportedAs({{"4g.20gb", 0, "MIG-x"}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.error().message.find("applied as [4g.20gb@0]"), std::string::npos)
      << st.error().message;
}

// Copies name a partition by its position in the desired order, so the order is part of the
// layout.
TEST_F(CarveThroughAgentTest, AnAppliedReportInAnotherOrderFailsTheCarve) {
  Status st = CarveReportedAs({{"3g.20gb", 4, "MIG-y"}, {"4g.20gb", 0, "MIG-x"}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
}

// A report acted on an older desired version (the agent has not seen the carve yet) is not
// final, nor is one whose version this server never issued (left from an earlier server
// process): the carve waits for the report of the version that holds its layout.
TEST_F(CarveThroughAgentTest, OnlyAReportOfTheCarvesVersionIsFinal) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  AgentNodeDriver driver(registry_, 30s);
  auto carve = std::async(std::launch::async, [&] {
    return driver.CarveGpu(NodeId("a"), GpuIndex(3), TwoPartitions());
  });
  protocol::DesiredState d = DesiredLayout("a");
  ReportApplied(d.version - 1, 3, {{"7g.40gb", 0, "MIG-old"}});
  ReportApplied(d.version + 100, 3, {{"7g.40gb", 0, "MIG-old"}});
  EXPECT_EQ(carve.wait_for(300ms), std::future_status::timeout);
  ReportApplied(d.version, 3, {{"4g.20gb", 0, "MIG-x"}, {"3g.20gb", 4, "MIG-y"}});
  Status st = carve.get();
  EXPECT_TRUE(st.ok()) << st.error().message;
}

TEST_F(CarveThroughAgentTest, CarveReturnsWhenTheAgentReportsTheLayout) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  AgentNodeDriver driver(registry_, 5s);
  auto carve = std::async(std::launch::async, [&] {
    return driver.CarveGpu(NodeId("a"), GpuIndex(3), TwoPartitions());
  });
  // Play the agent: read the desired state, report it applied.
  protocol::DesiredState d = DesiredLayout("a");
  ASSERT_EQ(d.gpus.size(), 1u);
  EXPECT_EQ(d.gpus[0].index, 3);
  EXPECT_TRUE(d.gpus[0].mig);
  ASSERT_EQ(d.gpus[0].partitions.size(), 2u);
  EXPECT_EQ(d.gpus[0].partitions[1], (protocol::PartitionSpec{"3g.20gb", 4}));
  auto s = Report("a");
  s.applied_version = d.version;
  protocol::GpuStatus g;
  g.index = 3;
  g.mig = true;
  g.applied = true;
  g.partitions = {{"4g.20gb", 0, "MIG-x"}, {"3g.20gb", 4, "MIG-y"}};
  s.gpus = {g};
  registry_.ReportStatus(s);
  Status st = carve.get();
  EXPECT_TRUE(st.ok()) << st.error().message;
}

TEST_F(CarveThroughAgentTest, TheAgentsErrorFailsTheCarve) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  AgentNodeDriver driver(registry_, 5s);
  auto carve = std::async(std::launch::async, [&] {
    return driver.CarveGpu(NodeId("a"), GpuIndex(0), TwoPartitions());
  });
  protocol::DesiredState d = DesiredLayout("a");
  auto s = Report("a");
  s.applied_version = d.version;
  protocol::GpuStatus g;
  g.index = 0;
  g.error = "GPU 0 has running processes (pid 4242); not re-carving";
  s.gpus = {g};
  registry_.ReportStatus(s);
  Status st = carve.get();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.error().message.find("pid 4242"), std::string::npos);
}

TEST_F(CarveThroughAgentTest, ANotReadyNodeFailsTheCarveAsUnavailable) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  clock_.Advance(11s);
  registry_.Sweep();
  AgentNodeDriver driver(registry_, 5s);
  Status st = driver.CarveGpu(NodeId("a"), GpuIndex(0), TwoPartitions());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
}

// Plays one node's agent: waits for its desired GPUs, then reports them carved (or `error`).
void ReportCarved(NodeRegistry& registry, const std::string& node, const std::string& error = "") {
  protocol::DesiredState d;
  for (int i = 0; i < 200 && d.gpus.size() < 8; ++i) {
    d = *registry.WaitDesired(node, registry.epoch(), 0, 0ms);
    if (d.gpus.size() < 8) std::this_thread::sleep_for(5ms);
  }
  protocol::StatusReport s;
  s.node_id = node;
  s.epoch = registry.epoch();
  s.applied_version = d.version;
  for (const auto& want : d.gpus) {
    protocol::GpuStatus g;
    g.index = want.index;
    g.mig = want.mig;
    g.applied = error.empty();
    g.error = error;
    for (const auto& p : want.partitions)
      g.partitions.push_back({p.profile, p.start, "MIG-" + node});
    s.gpus.push_back(g);
  }
  registry.ReportStatus(s);
}

TEST_F(CarveThroughAgentTest, CarveNodesSetsEveryGpuInOneChangeAndWaitsForEveryNode) {
  std::vector<NodeId> nodes;
  for (const char* n : {"a", "b", "c"}) {
    ASSERT_TRUE(registry_.Register(P4d(n)).has_value());
    nodes.emplace_back(n);
  }
  const uint64_t before = registry_.WaitDesired("a", registry_.epoch(), 0, 0ms)->version;
  AgentNodeDriver driver(registry_, 5s);
  std::atomic<bool> abort{false};
  auto carve = std::async(std::launch::async,
                          [&] { return driver.CarveNodes(nodes, 8, TwoPartitions(), abort); });
  ReportCarved(registry_, "a");
  ReportCarved(registry_, "b");
  // Two of three nodes carved: the wait goes on.
  EXPECT_EQ(carve.wait_for(100ms), std::future_status::timeout);
  // All eight GPUs came in one desired-state version.
  EXPECT_EQ(registry_.WaitDesired("a", registry_.epoch(), 0, 0ms)->version, before + 1);
  ReportCarved(registry_, "c");
  Status st = carve.get();
  EXPECT_TRUE(st.ok()) << st.error().message;
}

TEST_F(CarveThroughAgentTest, CarveNodesFailsWithTheFirstNodesErrorAndStopsOnAbort) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  ASSERT_TRUE(registry_.Register(P4d("b")).has_value());
  AgentNodeDriver driver(registry_, 5s);
  std::atomic<bool> abort{false};
  auto carve = std::async(std::launch::async, [&] {
    return driver.CarveNodes({NodeId("a"), NodeId("b")}, 8, TwoPartitions(), abort);
  });
  ReportCarved(registry_, "b", "NVML_ERROR_INSUFFICIENT_RESOURCES");
  Status st = carve.get();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.error().message.find("of b: NVML_ERROR_INSUFFICIENT_RESOURCES"), std::string::npos)
      << st.error().message;

  auto aborted = std::async(std::launch::async, [&] {
    return driver.CarveNodes({NodeId("a")}, 8, TwoPartitions(), abort);
  });
  EXPECT_EQ(aborted.wait_for(100ms), std::future_status::timeout);
  abort = true;
  ASSERT_EQ(aborted.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(aborted.get().error().code, ErrorCode::kUnavailable);
}

TEST_F(CarveThroughAgentTest, CarveNodesTimesOutNamingTheNodesStillCarving) {
  ASSERT_TRUE(registry_.Register(P4d("slow")).has_value());
  AgentNodeDriver driver(registry_, 300ms);
  std::atomic<bool> abort{false};
  Status st = driver.CarveNodes({NodeId("slow")}, 8, TwoPartitions(), abort);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(st.error().message.find("1 of 1 nodes (first: slow)"), std::string::npos)
      << st.error().message;
}

TEST_F(NodeRegistryTest, AnAsyncWatchIsAnsweredByAChangeOrItsDeadlineWithoutAThread) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  const uint64_t v = registry_.WaitDesired("a", registry_.epoch(), 0, 0ms)->version;
  std::promise<Result<protocol::DesiredState>> changed;
  registry_.WatchDesired("a", registry_.epoch(), v, 5s, [&](Result<protocol::DesiredState> r) {
    changed.set_value(std::move(r));
  });
  auto got = changed.get_future();
  EXPECT_EQ(got.wait_for(50ms), std::future_status::timeout);
  protocol::WorkloadDesired w;
  w.id = "acct/ic/1";
  registry_.SetWorkloads("sagemaker", NodeId("a"), {w});
  ASSERT_EQ(got.wait_for(2s), std::future_status::ready);
  auto d = got.get();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->version, v + 1);

  // Nothing changes: the deadline answers with the current state.
  std::promise<Result<protocol::DesiredState>> idle;
  registry_.WatchDesired("a", registry_.epoch(), v + 1, 100ms,
                         [&](Result<protocol::DesiredState> r) { idle.set_value(std::move(r)); });
  auto quiet = idle.get_future();
  ASSERT_EQ(quiet.wait_for(3s), std::future_status::ready);
  auto q = quiet.get();
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->version, v + 1);
}

TEST_F(NodeRegistryTest, AHeartbeatKeepsANodeReadyAndAsksForAStatusItLacks) {
  ASSERT_TRUE(registry_.Register(P4d("a")).has_value());
  auto s = Report("a");
  s.status_version = 7;
  registry_.ReportStatus(s);
  clock_.Advance(8s);
  auto hb = registry_.Heartbeat({"a", registry_.epoch(), 7, 0});
  EXPECT_FALSE(hb.send_status);
  EXPECT_FALSE(hb.reregister);
  clock_.Advance(8s);  // 16 s since the last full status, 8 s since the heartbeat.
  registry_.Sweep();
  EXPECT_TRUE(registry_.IsReady(NodeId("a")));
  // A heartbeat for a status the server never got asks for it.
  EXPECT_TRUE(registry_.Heartbeat({"a", registry_.epoch(), 9, 0}).send_status);
  // Another epoch, or an unknown node: register again.
  EXPECT_TRUE(registry_.Heartbeat({"a", "old", 7, 0}).reregister);
  EXPECT_TRUE(registry_.Heartbeat({"zz", registry_.epoch(), 1, 0}).reregister);
}

}  // namespace
}  // namespace carve::server::nodes
