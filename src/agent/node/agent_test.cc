#include "agent/node/agent.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "agent/node/fake_control_plane.h"
#include "agent/node/test_support.h"
#include "agent/nvml/fake_nvml.h"

namespace carve::agent::node {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using testing::ProcessExists;

class AgentTest : public ::testing::Test {
 protected:
  AgentTest() : dir_(testing::TempDir()), nvml_(FakeNvml::FromText("gpus: 8 x a100-40gb").value()) {
    control_.SetHeartbeatMs(100);
  }
  ~AgentTest() override {
    for (auto& a : agents_) a->StopWorkloads();
    std::filesystem::remove_all(dir_);
  }

  AgentOptions Options() {
    AgentOptions o;
    o.node_id = "node-a";
    o.nvml = nvml_.get();
    o.data_dir = dir_ + "/data";
    o.carve_binary = "/usr/local/bin/carve";
    o.cgroup_root = dir_ + "/no-cgroups";
    o.watch_wait = 200ms;
    o.loop_interval = 20ms;
    o.retry_initial = 100ms;
    o.retry_max = 1s;
    o.restart_initial_backoff = 50ms;
    o.stop_grace = 2s;
    return o;
  }
  Agent& StartAgent(AgentOptions o) {
    auto agent = Agent::Create(std::move(o), control_);
    EXPECT_TRUE(agent.has_value()) << agent.error().message;
    agents_.push_back(std::move(agent).value());
    agents_.back()->Start();
    return *agents_.back();
  }
  // The workload as the fake server last heard of it.
  std::optional<protocol::WorkloadStatus> Reported(const std::string& id) {
    auto r = control_.last_report();
    if (!r) return std::nullopt;
    for (const auto& w : r->workloads) {
      if (w.id == id) return w;
    }
    return std::nullopt;
  }
  bool Running(const std::string& id) {
    auto w = Reported(id);
    return w && w->state == protocol::WorkloadState::kRunning && w->pid > 0;
  }
  bool EventSeen(const std::string& part) {
    for (const auto& r : control_.reports()) {
      for (const auto& e : r.events) {
        if (e.find(part) != std::string::npos) return true;
      }
    }
    return false;
  }

  std::string dir_;
  std::unique_ptr<FakeNvml> nvml_;
  FakeControlPlane control_;
  std::vector<std::unique_ptr<Agent>> agents_;
};

TEST_F(AgentTest, RegistersItsInventoryWithTheDerivedInstanceType) {
  StartAgent(Options());
  ASSERT_TRUE(Eventually([&] { return !control_.registrations().empty(); }));
  const protocol::Registration r = control_.registrations().front();
  EXPECT_EQ(r.node_id, "node-a");
  EXPECT_EQ(r.instance_type, "ml.p4d.24xlarge");
  EXPECT_EQ(r.gpus.size(), 8u);
  EXPECT_EQ(r.data_dir, dir_ + "/data");
  ASSERT_TRUE(Eventually([&] { return control_.last_report().has_value(); }));
  EXPECT_EQ(control_.last_report()->epoch, "epoch-1");
}

TEST_F(AgentTest, BetweenChangesItSendsSmallHeartbeatsAndTheFullStatusOnlyOnChange) {
  AgentOptions o = Options();
  o.telemetry_interval = 1h;  // Only a change may send the full status in this test.
  StartAgent(o);
  ASSERT_TRUE(Eventually([&] { return control_.heartbeats().size() >= 5; }));
  // One full status after registering, then heartbeats that carry its version.
  const auto reports = control_.reports();
  ASSERT_GE(reports.size(), 1u);
  const uint64_t version = reports.back().status_version;
  for (const auto& hb : control_.heartbeats()) {
    EXPECT_EQ(hb.node_id, "node-a");
    EXPECT_EQ(hb.status_version, version);
  }
  const size_t before = control_.reports().size();
  EXPECT_LE(before, 2u);
  // A change: GPU 0 carved whole-card 7g.40gb; the status now differs, so it goes in full.
  control_.SetDesired({{0, true, {{"7g.40gb", 0}}}}, {});
  ASSERT_TRUE(Eventually([&] { return control_.reports().size() > before; }));
  EXPECT_GT(control_.reports().back().status_version, version);
}

TEST_F(AgentTest, CarvesThenStartsACopyBoundToItsMigDevice) {
  // The copy writes its environment into the test's directory, which a sandboxed process may
  // not (workload_sandbox_test.cc covers the sandbox).
  AgentOptions options = Options();
  options.sandbox.mode = launch::SandboxMode::kOff;
  StartAgent(options);
  auto w = testing::ShellCopy("acct/ic/1", "env > {out}; exec sleep 30");
  w.values["out"] = dir_ + "/env.txt";
  w.device.gpus = {3};
  w.device.partition_start = 4;  // The second 3g.20gb.
  control_.SetDesired({{3, true, {{"3g.20gb", 0}, {"3g.20gb", 4}}}}, {w});
  ASSERT_TRUE(Eventually([&] { return Running(w.id); }));
  auto report = control_.last_report();
  ASSERT_TRUE(Eventually([&] {
    report = control_.last_report();
    return report->applied_version == control_.version();
  }));
  const protocol::GpuStatus& gpu = report->gpus[3];
  ASSERT_EQ(gpu.partitions.size(), 2u);
  EXPECT_TRUE(gpu.applied);
  ASSERT_TRUE(Eventually([&] {
    return testing::ReadFile(dir_ + "/env.txt")
               .find("CUDA_VISIBLE_DEVICES=" + gpu.partitions[1].uuid) != std::string::npos;
  }));
}

TEST_F(AgentTest, RemovingAWorkloadFromTheDesiredStateStopsIt) {
  StartAgent(Options());
  auto w = testing::ShellCopy("acct/ic/2", "exec sleep 30");
  control_.SetDesired({}, {w});
  ASSERT_TRUE(Eventually([&] { return Running(w.id); }));
  const int pid = Reported(w.id)->pid;
  control_.SetDesired({}, {});
  ASSERT_TRUE(Eventually([&] { return !Reported(w.id).has_value(); }));
  EXPECT_FALSE(ProcessExists(pid));
}

TEST_F(AgentTest, ACrashedCopyIsRestartedAndTheEventReported) {
  StartAgent(Options());
  auto w = testing::ShellCopy("acct/ic/3", "exit 7");
  control_.SetDesired({}, {w});
  ASSERT_TRUE(Eventually([&] { return EventSeen("exited with status 7, restarting in"); }));
  ASSERT_TRUE(Eventually([&] {
    auto r = Reported(w.id);
    return r && r->restarts >= 1;
  }));
}

// The agent's loop holds mGPU shares to their memory quota with NVML's per-process counts: a
// share whose process holds more than its quota plus the slack is stopped and reported failed.
TEST_F(AgentTest, AShareOverItsMemoryQuotaIsStoppedAndReportedFailed) {
  AgentOptions o = Options();
  o.interposer_path = CARVE_MGPU_LIB_PATH;
  o.share_memory_slack_mib = 256;
  StartAgent(o);
  auto w = testing::ShellCopy("acct/ic-greedy/1", "exec sleep 30");
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{50, 1024, protocol::Enforcement::kInterposer, false};
  control_.SetDesired({}, {w});
  ASSERT_TRUE(Eventually([&] { return Running(w.id); })) << Reported(w.id)->message;
  const int pid = Reported(w.id)->pid;
  nvml_->AddProcess(0, static_cast<uint32_t>(pid), 1024 + 256 + 1);
  ASSERT_TRUE(Eventually([&] {
    auto r = Reported(w.id);
    return r && r->state == protocol::WorkloadState::kFailed;
  }));
  EXPECT_NE(Reported(w.id)->message.find("held 1281 MiB"), std::string::npos)
      << Reported(w.id)->message;
  EXPECT_TRUE(EventSeen("held 1281 MiB of device memory on GPU 0"));
  EXPECT_TRUE(Eventually([&] { return !testing::ProcessExists(pid); }));
}

TEST_F(AgentTest, ABusyGpuIsNotReCarvedAndItsErrorIsReportedOnce) {
  Agent& agent = StartAgent(Options());
  auto w = testing::ShellCopy("acct/ic/4", "exec sleep 30");
  w.device.gpus = {0};
  w.device.partition_start = 0;
  control_.SetDesired({{0, true, {{"7g.40gb", 0}}}}, {w});
  ASSERT_TRUE(Eventually([&] { return Running(w.id); }));
  const int creates = nvml_->core().gpu_instance_create_calls();
  control_.SetDesired({{0, true, {{"3g.20gb", 0}, {"3g.20gb", 4}}}}, {w});
  ASSERT_TRUE(Eventually([&] {
    auto r = control_.last_report();
    return r && !r->gpus[0].error.empty();
  }));
  // Ten more loop passes, each of which could try again, then two more sends of the report
  // loop: a pending event makes a send a full report, so those would carry any event the passes
  // raised (and without one, they are heartbeats).
  const uint64_t passes = agent.apply_passes();
  ASSERT_TRUE(Eventually([&] { return agent.apply_passes() >= passes + 10; }));
  auto sends = [&] { return control_.reports().size() + control_.heartbeats().size(); };
  const size_t sent = sends();
  ASSERT_TRUE(Eventually([&] { return sends() >= sent + 2; }));
  int mentions = 0;
  for (const auto& r : control_.reports()) {
    for (const auto& e : r.events) mentions += e.find("never re-carved") != std::string::npos;
  }
  EXPECT_EQ(mentions, 1);
  EXPECT_EQ(nvml_->core().gpu_instance_create_calls(), creates);
  EXPECT_TRUE(Running(w.id));
}

TEST_F(AgentTest, AnUnreachableServerIsRetriedWithBackoffThenRegistered) {
  control_.SetReachable(false);
  StartAgent(Options());
  ASSERT_TRUE(Eventually([&] { return control_.register_attempts().size() >= 4; }));
  const auto attempts = control_.register_attempts();
  for (size_t i = 1; i < 4; ++i) {
    const auto gap =
        std::chrono::duration_cast<std::chrono::milliseconds>(attempts[i] - attempts[i - 1]);
    // The i-th wait is drawn from [d/2, d] with d = 100 ms x 2^(i-1).
    EXPECT_GE(gap.count(), (100 << (i - 1)) / 2 - 5) << "gap " << i;
  }
  EXPECT_TRUE(control_.registrations().empty());
  control_.SetReachable(true);
  ASSERT_TRUE(Eventually([&] { return control_.registrations().size() == 1; }));
  ASSERT_TRUE(Eventually([&] { return control_.last_report().has_value(); }));
}

TEST_F(AgentTest, ReregistersWhenTheServerForgetsTheNodeAndKeepsWorkloadsRunning) {
  StartAgent(Options());
  auto w = testing::ShellCopy("acct/ic/5", "exec sleep 30");
  control_.SetDesired({}, {w});
  ASSERT_TRUE(Eventually([&] { return Running(w.id); }));
  const int pid = Reported(w.id)->pid;
  control_.RequestReregister();
  ASSERT_TRUE(Eventually([&] { return control_.registrations().size() == 2; }));
  control_.Restart("epoch-2");  // A restarted server: new epoch.
  ASSERT_TRUE(Eventually([&] { return control_.registrations().size() == 3; }));
  ASSERT_TRUE(Eventually([&] {
    auto r = control_.last_report();
    return r && r->epoch == "epoch-2";
  }));
  EXPECT_EQ(Reported(w.id)->pid, pid);
  EXPECT_EQ(Reported(w.id)->restarts, 0);
}

TEST_F(AgentTest, ARestartedAgentAdoptsDesiredProcessesAndKillsTheRest) {
  Agent& first = StartAgent(Options());
  auto keep = testing::ShellCopy("acct/ic/6", "exec sleep 30");
  auto drop = testing::ShellCopy("acct/ic/7", "exec sleep 30");
  drop.index = 1;
  control_.SetDesired({}, {keep, drop});
  ASSERT_TRUE(Eventually([&] { return Running(keep.id) && Running(drop.id); }));
  const int keep_pid = Reported(keep.id)->pid;
  const int drop_pid = Reported(drop.id)->pid;
  first.Stop();  // Workloads keep running.
  EXPECT_TRUE(ProcessExists(keep_pid));
  control_.SetDesired({}, {keep});
  StartAgent(Options());
  ASSERT_TRUE(Eventually([&] { return !ProcessExists(drop_pid); }));
  ASSERT_TRUE(Eventually([&] { return Running(keep.id) && !Reported(drop.id).has_value(); }));
  EXPECT_EQ(Reported(keep.id)->pid, keep_pid);
}

TEST_F(AgentTest, TheSimDriverNeedsAConfigurationOrAnInstanceType) {
  AgentOptions o = Options();
  o.nvml = nullptr;
  o.driver = "sim";
  auto agent = Agent::Create(o, control_);
  ASSERT_FALSE(agent.has_value());
  EXPECT_NE(agent.error().message.find("--instance-type"), std::string::npos);
  o.instance_type = "ml.p5.48xlarge";
  auto sim = Agent::Create(o, control_);
  ASSERT_TRUE(sim.has_value()) << sim.error().message;
  EXPECT_EQ((*sim)->registration().gpus.size(), 8u);
  EXPECT_EQ((*sim)->registration().gpus[0].catalog_model, "h100-80gb");
  EXPECT_EQ((*sim)->registration().driver, "sim");
}

TEST_F(AgentTest, AnInstanceTypeThatCannotBeDerivedIsAnErrorNamingTheGpus) {
  AgentOptions o = Options();
  o.nvml = nullptr;
  o.driver = "sim";
  o.sim_config = "gpus: 3 x a100-40gb";
  auto agent = Agent::Create(o, control_);
  ASSERT_FALSE(agent.has_value());
  EXPECT_NE(agent.error().message.find("a100-40gb"), std::string::npos) << agent.error().message;
}

TEST_F(AgentTest, ForcedNvmlWithoutTheLibraryFails) {
  AgentOptions o = Options();
  o.nvml = nullptr;
  o.driver = "nvml";
  o.nvml_library = dir_ + "/libnvidia-ml.so.1";
  EXPECT_FALSE(Agent::Create(o, control_).has_value());
}

}  // namespace
}  // namespace carve::agent::node
