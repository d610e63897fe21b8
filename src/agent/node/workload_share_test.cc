// WorkloadManager: mGPU shares under the interposer or as variables only, the memory and ledger
// guards, and MPS. The fixture: workload_manager_test_fixture.h.
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
#include "common/fake_clock.h"

namespace carve::agent::node {
namespace {

TEST_F(WorkloadManagerTest, AnInterposerShareWithoutTheLibraryFailsNamingWhy) {
  options_.interposer_path = "";
  auto w = ShellCopy("acct/ic-share/1", "env > {out}; exec sleep 30");
  w.values["out"] = dir_ + "/env.txt";
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{30, 2048, protocol::Enforcement::kInterposer, false};
  Apply({w});
  auto s = Find(w.id);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, protocol::WorkloadState::kFailed);
  EXPECT_EQ(s->pid, 0);
  EXPECT_NE(s->message.find("no libcarve-mgpu.so"), std::string::npos) << s->message;
  EXPECT_NE(s->message.find("core 30%, memory 2048 MiB"), std::string::npos) << s->message;
  EXPECT_NE(s->message.find("enforcement \"none\""), std::string::npos) << s->message;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/env.txt")) << "the worker ran unenforced";
  Apply({w});  // Terminal until its desired entry changes: it is not retried unenforced.
  EXPECT_EQ(Find(w.id)->state, protocol::WorkloadState::kFailed);
  EXPECT_EQ(Find(w.id)->pid, 0);
}

TEST_F(WorkloadManagerTest, AnInterposerShareWithAnUnreadableLibraryFailsNamingIt) {
  options_.interposer_path = dir_ + "/no-such/libcarve-mgpu.so";
  auto w = ShellCopy("acct/ic-share/5", "exec sleep 30");
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{30, 2048, protocol::Enforcement::kInterposer, false};
  Apply({w});
  auto s = Find(w.id);
  EXPECT_EQ(s->state, protocol::WorkloadState::kFailed);
  EXPECT_EQ(s->pid, 0);
  EXPECT_NE(s->message.find(options_.interposer_path + " cannot be read"), std::string::npos)
      << s->message;
}

// A queue that asked for unenforced shares (enforcement "none") runs them with the limits as
// plain variables, without the interposer even where the agent has it.
TEST_F(WorkloadManagerTest, AShareOfAQueueWithoutEnforcementGetsItsLimitsAsVariablesOnly) {
  options_.interposer_path = CARVE_MGPU_LIB_PATH;
  auto w = ShellCopy("acct/ic-share/1", "env > {out}; exec sleep 30");
  w.values["out"] = dir_ + "/env.txt";
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{30, 2048, protocol::Enforcement::kNone, false};
  Apply({w});
  ASSERT_TRUE(Eventually(
      [&] { return ReadFile(dir_ + "/env.txt").find("CARVE_PORT") != std::string::npos; }));
  const std::string env = ReadFile(dir_ + "/env.txt");
  EXPECT_NE(env.find("CUDA_VISIBLE_DEVICES=" + gpus_->GpuUuid(0).value()), std::string::npos);
  EXPECT_NE(env.find("CARVE_MGPU_CORE_PERCENT=30"), std::string::npos) << env;
  EXPECT_NE(env.find("CARVE_MGPU_MEMORY_MIB=2048"), std::string::npos) << env;
  EXPECT_NE(env.find("CARVE_MGPU_ENFORCEMENT=none"), std::string::npos) << env;
  EXPECT_EQ(env.find("LD_PRELOAD"), std::string::npos) << env;
  EXPECT_EQ(env.find("CARVE_MGPU_LEDGER"), std::string::npos) << env;
  EXPECT_EQ(Find(w.id)->state, protocol::WorkloadState::kRunning);
  EXPECT_EQ(Find(w.id)->memory_used_mib, -1);
}

// A newer server may name an enforcement this agent does not know: that workload fails alone,
// naming the accepted ones, and the rest of the desired state runs.
TEST_F(WorkloadManagerTest, AShareWithAnUnknownEnforcementFailsAloneNamingTheAcceptedOnes) {
  auto ok = ShellCopy("acct/ic-share/5", "exec sleep 30");
  auto w = ShellCopy("acct/ic-share/6", "exec sleep 30");
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{30, 2048, protocol::Enforcement::kInterposer, false};
  protocol::DesiredState d;
  d.workloads = {ok, w};
  nlohmann::json sent = protocol::ToJson(d);
  sent["workloads"][1]["device"]["share"]["enforcement"] = "hami";
  auto read = protocol::DesiredStateFromJson(sent);
  ASSERT_TRUE(read.has_value()) << read.error().message;
  ASSERT_EQ(read->workloads.size(), 1u);
  ASSERT_EQ(read->unreadable.size(), 1u);
  Apply(read->workloads, read->unreadable);
  ASSERT_TRUE(Find(w.id).has_value());
  EXPECT_EQ(Find(w.id)->state, protocol::WorkloadState::kFailed);
  EXPECT_NE(Find(w.id)->message.find("enforcement='hami': must be one of interposer, mps, none"),
            std::string::npos)
      << Find(w.id)->message;
  ASSERT_TRUE(Find(ok.id).has_value());
  EXPECT_NE(Find(ok.id)->state, protocol::WorkloadState::kFailed);
  EXPECT_NE(Find(ok.id)->pid, 0);
  // Read again on the next pass, it stays failed and the event is not repeated.
  (void)Manager().TakeEvents();
  Apply(read->workloads, read->unreadable);
  EXPECT_EQ(Find(w.id)->state, protocol::WorkloadState::kFailed);
  EXPECT_FALSE(HasEvent(Manager().TakeEvents(), "cannot read"));
}

// The fixture launches mGPU shares under the real libcarve-mgpu.so (built beside this test), and
// the probe program over the fake libcuda.so.1 stands in for a CUDA workload.
std::string WorkerEnvironment(int pid) {
  std::string env = ReadFile("/proc/" + std::to_string(pid) + "/environ");
  std::replace(env.begin(), env.end(), '\0', '\n');
  return env;
}

// What the agent promises an interposer share: the process runs with LD_PRELOAD naming the
// library and CARVE_MGPU_LEDGER naming its ledger, and the library, loaded from them, charges
// what the process allocates to that ledger, under the share's quota.

TEST_F(WorkloadManagerTest, AnInterposerShareRunsUnderTheLibraryAndChargesItsLedger) {
  options_.interposer_path = CARVE_MGPU_LIB_PATH;
  protocol::WorkloadDesired w = ShellCopy("acct/ic-share/2", "");
  w.command = {CARVE_MGPU_PROBE_PATH, "direct", "hold", std::to_string(3 << 20)};
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{50, 1024, protocol::Enforcement::kInterposer, false};
  Apply({w});
  auto s = Find(w.id);
  ASSERT_EQ(s->state, protocol::WorkloadState::kRunning) << s->message;
  const std::string env = WorkerEnvironment(s->pid);
  std::string ledger_var;
  for (std::istringstream lines(env); std::getline(lines, ledger_var);) {
    if (ledger_var.rfind("CARVE_MGPU_LEDGER=", 0) == 0) break;
  }
  // InterposerPreload: an ASan build puts the ASan runtime first.
  EXPECT_NE(env.find("LD_PRELOAD=" + launch::InterposerPreload(CARVE_MGPU_LIB_PATH)),
            std::string::npos)
      << env;
  ASSERT_EQ(ledger_var.rfind("CARVE_MGPU_LEDGER=" + dir_ + "/data/workloads/", 0), 0u) << env;
  auto ledger = interposer::Ledger::Open(ledger_var.substr(18), nullptr);
  ASSERT_TRUE(ledger.has_value()) << ledger.error().message;
  EXPECT_EQ((*ledger)->settings().memory_limit_bytes, 1024u << 20);
  ASSERT_TRUE(Eventually([&] { return (*ledger)->Snapshot().used_bytes == 3u << 20; }))
      << "the process's allocation never reached its ledger";
  EXPECT_EQ((*ledger)->Snapshot().processes.at(0).pid, s->pid);
  EXPECT_TRUE(Eventually([&] { return Find(w.id)->memory_used_mib == 3; }));
}

// The achieved core share is the busy time the worker's limiter charged to its ledger over the
// wall time between two reports, as a percent of the card: 1 ms over 10 ms is 10 %.
TEST_F(WorkloadManagerTest, AnInterposerShareReportsItsAchievedCorePercent) {
  options_.interposer_path = CARVE_MGPU_LIB_PATH;
  options_.core_sample_interval = 10ms;
  FakeClock clock;
  manager_ = std::make_unique<WorkloadManager>(options_, launcher_, clock, *gpus_);
  auto limited = ShellCopy("acct/ic-share/3", "exec sleep 30");
  limited.device.gpus = {0};
  limited.device.share = protocol::ShareSpec{50, 1024, protocol::Enforcement::kInterposer, false};
  auto whole = ShellCopy("acct/ic-share/4", "exec sleep 30");
  whole.device.gpus = {1};
  whole.device.share = protocol::ShareSpec{100, 1024, protocol::Enforcement::kInterposer, false};
  Apply({limited, whole});
  auto first = Find(limited.id);  // Every status report samples the rate.
  ASSERT_EQ(first->state, protocol::WorkloadState::kRunning) << first->message;
  EXPECT_EQ(first->core_used_percent, -1) << "one sample is not a rate";
  std::string ledger_path;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_ + "/data/workloads")) {
    if (e.path().filename() == "ledger" &&
        e.path().string().find("ic-share") != std::string::npos) {
      auto l = interposer::Ledger::Open(e.path().string(), nullptr);
      ASSERT_TRUE(l.has_value()) << l.error().message;
      if ((*l)->settings().core_percent == 50) ledger_path = e.path().string();
    }
  }
  ASSERT_FALSE(ledger_path.empty());
  auto ledger = interposer::Ledger::Open(ledger_path, nullptr);
  ASSERT_TRUE(ledger.has_value());
  std::atomic<int64_t>& busy = (*ledger)->bucket().busy_ns_total;
  busy.fetch_add(1'000'000);  // The worker ran kernels for 1 ms ...
  clock.Advance(10ms);        // ... in 10 ms.
  EXPECT_DOUBLE_EQ(Find(limited.id)->core_used_percent, 10.0);
  busy.fetch_add(4'000'000);
  clock.Advance(5ms);  // Shorter than the sample interval: the last rate stands.
  EXPECT_DOUBLE_EQ(Find(limited.id)->core_used_percent, 10.0);
  clock.Advance(5ms);  // 4 ms over the 10 ms since the last rate.
  EXPECT_DOUBLE_EQ(Find(limited.id)->core_used_percent, 40.0);
  clock.Advance(10ms);  // Idle.
  EXPECT_DOUBLE_EQ(Find(limited.id)->core_used_percent, 0.0);
  EXPECT_EQ(Find(whole.id)->core_used_percent, -1) << "core 100 is not limited, so not measured";
}

// Gone, or a zombie nobody has reaped yet: either way it holds nothing.
bool Gone(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

// A hostile worker allocates around the interposer (the fake NVML says what the driver would:
// its processes hold 4096 MiB against a 1024 MiB quota), from a child that left the process
// group. The agent stops the worker and the child, as failed, naming what NVML counted; a
// share on the other card within its quota plus the slack keeps running.
TEST_F(WorkloadManagerTest, AShareHoldingMoreDeviceMemoryThanItsQuotaIsStopped) {
  options_.interposer_path = CARVE_MGPU_LIB_PATH;
  options_.share_memory_slack_mib = 512;
  auto hostile = ShellCopy("acct/ic-greedy/1",
                           "setsid sh -c 'echo $$ > {out}; exec sleep 30' & exec sleep 30");
  hostile.values["out"] = dir_ + "/child.pid";
  hostile.device.gpus = {0};
  hostile.device.share = protocol::ShareSpec{50, 1024, protocol::Enforcement::kInterposer, false};
  auto fair = ShellCopy("acct/ic-fair/1", "exec sleep 30");
  fair.device.gpus = {1};
  fair.device.share = protocol::ShareSpec{50, 1024, protocol::Enforcement::kInterposer, false};
  Apply({hostile, fair});
  const int worker = Find(hostile.id)->pid;
  const int fair_pid = Find(fair.id)->pid;
  ASSERT_NE(worker, 0) << Find(hostile.id)->message;
  ASSERT_NE(fair_pid, 0) << Find(fair.id)->message;
  ASSERT_TRUE(Eventually([&] { return !ReadFile(dir_ + "/child.pid").empty(); }));
  const int child = std::stoi(ReadFile(dir_ + "/child.pid"));
  nvml_->core().AddProcess(0, static_cast<uint32_t>(worker), 300);
  nvml_->core().AddProcess(0, static_cast<uint32_t>(child), 3796);
  nvml_->core().AddProcess(0, 1, 30000);  // not carve's: counts against nobody
  nvml_->core().AddProcess(1, static_cast<uint32_t>(fair_pid), 1024 + 512);

  Manager().HoldShareQuotas(gpus_->Statuses(true));
  auto s = Find(hostile.id);
  EXPECT_EQ(s->state, protocol::WorkloadState::kFailed);
  EXPECT_EQ(s->pid, 0);
  EXPECT_NE(s->message.find("held 4096 MiB of device memory on GPU 0 (pids " +
                            std::to_string(worker) + ", " + std::to_string(child) + ")"),
            std::string::npos)
      << s->message;
  EXPECT_NE(s->message.find("quota of 1024 MiB plus the 512 MiB"), std::string::npos) << s->message;
  EXPECT_TRUE(HasEvent(Manager().TakeEvents(), "held 4096 MiB"));
  EXPECT_TRUE(Eventually([&] { return Gone(worker) && Gone(child); }))
      << "the worker or its child outlived the stop";
  EXPECT_EQ(Find(fair.id)->state, protocol::WorkloadState::kRunning) << Find(fair.id)->message;
  EXPECT_FALSE(Gone(fair_pid));
  Apply({hostile, fair});  // Terminal until its desired entry changes: not started again.
  EXPECT_EQ(Find(hostile.id)->state, protocol::WorkloadState::kFailed);
  EXPECT_EQ(Find(hostile.id)->pid, 0);
}

// The worker can write its ledger (the interposer charges it), so a hostile one raises its own
// quota there. The agent compares the file with the limits it wrote: the running worker is
// stopped, and one that did it before an agent restart is not adopted.
const char kRaiseOwnQuota[] =
    "python3 -c \"import os, struct; f = os.open(os.environ['CARVE_MGPU_LEDGER'], os.O_RDWR); "
    "os.pwrite(f, struct.pack('<Q', 64 << 30), 80)\" && touch {out} && exec sleep 30";

TEST_F(WorkloadManagerTest, AWorkerThatRewritesItsLedgerLimitsIsStopped) {
  options_.interposer_path = CARVE_MGPU_LIB_PATH;
  auto w = ShellCopy("acct/ic-rewrite/1", kRaiseOwnQuota);
  w.values["out"] = dir_ + "/rewritten";
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{50, 1024, protocol::Enforcement::kInterposer, false};
  Apply({w});
  const int worker = Find(w.id)->pid;
  ASSERT_NE(worker, 0) << Find(w.id)->message;
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(dir_ + "/rewritten"); }));
  Manager().HoldShareQuotas(gpus_->Statuses(true));
  auto s = Find(w.id);
  EXPECT_EQ(s->state, protocol::WorkloadState::kFailed);
  EXPECT_NE(s->message.find("rewrote the limits in its ledger (memory 65536 MiB"),
            std::string::npos)
      << s->message;
  EXPECT_TRUE(Eventually([&] { return Gone(worker); }));
}

TEST_F(WorkloadManagerTest, AWorkerThatRewroteItsLedgerLimitsIsNotAdopted) {
  options_.interposer_path = CARVE_MGPU_LIB_PATH;
  auto w = ShellCopy("acct/ic-rewrite/2", kRaiseOwnQuota);
  w.values["out"] = dir_ + "/rewritten";
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{50, 1024, protocol::Enforcement::kInterposer, false};
  Apply({w});
  const int worker = Find(w.id)->pid;
  ASSERT_NE(worker, 0) << Find(w.id)->message;
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(dir_ + "/rewritten"); }));
  RestartAgent();
  Apply({w});
  auto s = Find(w.id);
  EXPECT_EQ(s->state, protocol::WorkloadState::kFailed);
  EXPECT_NE(s->message.find("the worker rewrote its own limits, so it is not adopted"),
            std::string::npos)
      << s->message;
  EXPECT_TRUE(Eventually([&] { return Gone(worker); })) << "the unadopted worker still runs";
}

TEST_F(WorkloadManagerTest, AnMpsShareWithoutTheControlBinaryFailsNamingIt) {
  options_.mps_control_path = dir_ + "/nvidia-cuda-mps-control";
  auto w = ShellCopy("acct/ic-mps/1", "exec sleep 30");
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{30, 1024, protocol::Enforcement::kMps, false};
  Apply({w});
  auto s = Find(w.id);
  EXPECT_EQ(s->state, protocol::WorkloadState::kFailed);
  EXPECT_NE(s->message.find(options_.mps_control_path), std::string::npos) << s->message;
}

}  // namespace
}  // namespace carve::agent::node
