#include "agent/node/workload_manager.h"

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

#include "agent/launch/process_launcher.h"
#include "agent/node/test_support.h"
#include "agent/nvml/fake_nvml.h"
#include "common/fake_clock.h"

namespace carve::agent::node {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using testing::ProcessExists;
using testing::ReadFile;
using testing::ShellCopy;

class WorkloadManagerTest : public ::testing::Test {
 protected:
  WorkloadManagerTest()
      : dir_(testing::TempDir()),
        nvml_(FakeNvml::FromText("gpus: 2 x a100-40gb").value()),
        gpus_(std::make_unique<GpuApplier>(*nvml_, SystemClock::Get())) {
    EXPECT_TRUE(gpus_->Init().ok());
    options_.command = {"node-a", dir_ + "/data", "/usr/local/bin/carve", "/usr/bin:/bin"};
    options_.cgroup_root = dir_ + "/no-cgroups";
    options_.stop_grace = 2s;
    options_.initial_backoff = 50ms;
    options_.max_backoff = 200ms;
    options_.probe_interval = 50ms;
  }
  ~WorkloadManagerTest() override {
    if (manager_) manager_->StopAll();
    std::filesystem::remove_all(dir_);
  }

  WorkloadManager& Manager() {
    if (!manager_)
      manager_ = std::make_unique<WorkloadManager>(options_, launcher_, SystemClock::Get(), *gpus_);
    return *manager_;
  }
  // The agent restarts: a new manager and a new GPU applier, which knows no desired layout
  // until its first Apply (the GPUs themselves keep their partitions). Processes stay.
  void RestartAgent() {
    manager_.reset();
    gpus_ = std::make_unique<GpuApplier>(*nvml_, SystemClock::Get());
    ASSERT_TRUE(gpus_->Init().ok());
  }
  // One apply pass, as the agent's loop runs it.
  void Apply(const std::vector<protocol::WorkloadDesired>& desired) {
    Manager().StopUndesired(desired);
    (void)gpus_->Apply(gpu_desired_, Manager().BusyGpus());
    Manager().StartMissing(desired);
    Manager().Poll();
  }
  std::optional<protocol::WorkloadStatus> Find(const std::string& id) {
    for (auto& s : Manager().Statuses()) {
      if (s.id == id) return s;
    }
    return std::nullopt;
  }
  bool HasEvent(const std::vector<std::string>& events, const std::string& part) {
    for (const auto& e : events) {
      if (e.find(part) != std::string::npos) return true;
    }
    return false;
  }

  std::string dir_;
  std::unique_ptr<FakeNvml> nvml_;
  std::unique_ptr<GpuApplier> gpus_;
  launch::ProcessLauncher launcher_;
  WorkloadOptions options_;
  std::vector<protocol::GpuDesired> gpu_desired_;
  std::unique_ptr<WorkloadManager> manager_;
};

TEST_F(WorkloadManagerTest, StartsACopyBoundToTheMigDeviceOfItsPartition) {
  gpu_desired_ = {{1, true, {{"3g.20gb", 0}, {"3g.20gb", 4}}}};
  auto w = ShellCopy("acct/ic-test/1", "env > {out}; echo carve={carve}; exec sleep 30");
  w.values["out"] = dir_ + "/env.txt";
  w.device.gpus = {1};
  w.device.partition = 1;
  Apply({w});
  ASSERT_TRUE(Eventually(
      [&] { return ReadFile(dir_ + "/env.txt").find("CARVE_PORT") != std::string::npos; }));
  const std::string env = ReadFile(dir_ + "/env.txt");
  EXPECT_NE(env.find("CUDA_VISIBLE_DEVICES=" + gpus_->PartitionUuid(1, 1).value()),
            std::string::npos)
      << env;
  auto s = Find(w.id);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, "running");
  EXPECT_GT(s->pid, 0);
  EXPECT_EQ(s->address, "127.0.0.1:" + std::to_string(s->port));
  EXPECT_NE(env.find("CARVE_PORT=" + std::to_string(s->port)), std::string::npos) << env;
  EXPECT_EQ(s->log_dir, dir_ + "/data/logs/acct+ic-test+1");
  EXPECT_TRUE(Eventually([&] {
    return ReadFile(s->log_dir + "/stdout.log").find("carve=/usr/local/bin/carve") !=
           std::string::npos;
  }));
}

TEST_F(WorkloadManagerTest, ApplyingTheSameStateTwiceKeepsTheSameProcess) {
  auto w = ShellCopy("acct/ic-test/2", "exec sleep 30");
  Apply({w});
  const int pid = Find(w.id)->pid;
  ASSERT_GT(pid, 0);
  Apply({w});
  Apply({w});
  EXPECT_EQ(Find(w.id)->pid, pid);
  EXPECT_EQ(Find(w.id)->restarts, 0);
}

TEST_F(WorkloadManagerTest, RemovingAWorkloadStopsItAndLeavesNoProcess) {
  auto w = ShellCopy("acct/ic-test/3", "sleep 30 & exec sleep 30");
  Apply({w});
  const int pid = Find(w.id)->pid;
  ASSERT_TRUE(ProcessExists(pid));
  (void)Manager().TakeEvents();
  Apply({});
  EXPECT_FALSE(ProcessExists(pid));
  EXPECT_TRUE(launch::LiveGroupMembers(pid).empty());  // The forked sleep went too.
  EXPECT_FALSE(Find(w.id).has_value());
  EXPECT_TRUE(HasEvent(Manager().TakeEvents(), "no longer desired"));
  EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/data/workloads"));
}

// Logs are keyed by the owner's id: a copy that is no longer desired takes its log with it.
TEST_F(WorkloadManagerTest, AStoppedCopyTakesItsLogDirectoryWithIt) {
  auto w = ShellCopy("acct/ic-test/gone", "echo secret-of-acct; exec sleep 30");
  Apply({w});
  const std::string log_dir = Find(w.id)->log_dir;
  ASSERT_TRUE(Eventually(
      [&] { return ReadFile(log_dir + "/stdout.log").find("secret") != std::string::npos; }));
  Apply({});
  EXPECT_FALSE(std::filesystem::exists(log_dir));
}

// A task's log outlives its process (the job's logs route reads it after the job ended), but a
// later workload with the same id (a queue deleted and created again) starts with an empty log.
TEST_F(WorkloadManagerTest, ATaskKeepsItsLogAfterStoppingAndARerunOfItsIdStartsEmpty) {
  auto w = ShellCopy("acct/q/job-0001/task-0.0", "echo first-incarnation");
  w.kind = "task";
  w.restart = "never";
  Apply({w});
  const std::string log_dir = Find(w.id)->log_dir;
  ASSERT_TRUE(Eventually([&] {
    Apply({w});
    return Find(w.id)->state == "succeeded";
  }));
  Apply({});
  ASSERT_NE(ReadFile(log_dir + "/stdout.log").find("first-incarnation"), std::string::npos);
  w.command = {"/bin/sh", "-c", "echo second-incarnation"};
  Apply({w});
  ASSERT_TRUE(Eventually([&] {
    Apply({w});
    return Find(w.id)->state == "succeeded";
  }));
  EXPECT_EQ(ReadFile(log_dir + "/stdout.log"), "second-incarnation\n");
}

// A finished task's log stays while the server lists it (its job exists) and goes when it does
// not (the job or its queue was deleted); a running workload's log is never removed.
TEST_F(WorkloadManagerTest, AnEndedTasksLogGoesWhenTheServerNoLongerListsIt) {
  auto done = ShellCopy("acct/q/job-0001/task-0.0", "echo finished");
  done.kind = "task";
  done.restart = "never";
  auto other = ShellCopy("acct/q/job-0002/task-0.0", "echo other");
  other.kind = "task";
  other.restart = "never";
  Apply({done, other});
  const std::string done_dir = Find(done.id)->log_dir;
  const std::string other_dir = Find(other.id)->log_dir;
  ASSERT_TRUE(Eventually([&] {
    Apply({done, other});
    return Find(done.id)->state == "succeeded" && Find(other.id)->state == "succeeded";
  }));
  auto running = ShellCopy("acct/ic/1", "exec sleep 30");
  Apply({running});
  (void)Manager().TakeEvents();
  // Both jobs still exist: nothing goes.
  EXPECT_EQ(Manager().RemoveUnlistedLogs({running}, {done.id, other.id}), 0);
  EXPECT_TRUE(std::filesystem::exists(done_dir + "/stdout.log"));
  // The first job was deleted: only its log goes.
  EXPECT_EQ(Manager().RemoveUnlistedLogs({running}, {other.id}), 1);
  EXPECT_FALSE(std::filesystem::exists(done_dir));
  EXPECT_NE(ReadFile(other_dir + "/stdout.log").find("other"), std::string::npos);
  EXPECT_TRUE(HasEvent(Manager().TakeEvents(), "removed the logs of " + done.id));
  // A copy this manager runs keeps its log even when a listing leaves it out.
  EXPECT_EQ(Manager().RemoveUnlistedLogs({}, {}), 1);
  EXPECT_TRUE(std::filesystem::exists(Find(running.id)->log_dir));
  EXPECT_FALSE(std::filesystem::exists(other_dir));
}

// Each workload runs in a cgroup of its own, with limits only where it has them (a directory
// standing in for a v2 hierarchy: what the manager wrote is read back).
TEST_F(WorkloadManagerTest, EveryWorkloadRunsInACgroupOfItsOwnLimitedOrNot) {
  const std::string root = dir_ + "/cgroup-v2";
  std::filesystem::create_directories(root);
  std::ofstream(root + "/cgroup.controllers") << "cpu memory";
  options_.cgroup_root = root;
  auto plain = ShellCopy("acct/ic/plain", "exec sleep 30");
  auto limited = ShellCopy("acct/ic/limited", "exec sleep 30");
  limited.memory_mib = 512;
  ASSERT_TRUE(Eventually([&] {
    Apply({plain, limited});
    return Find(plain.id)->pid > 0 && Find(limited.id)->pid > 0;
  }));
  std::map<std::string, std::string> procs_of;  // pid -> its cgroup directory
  for (const auto& e : std::filesystem::directory_iterator(root + "/carve")) {
    if (e.is_directory()) procs_of[ReadFile(e.path() / "cgroup.procs")] = e.path().string();
  }
  ASSERT_EQ(procs_of.size(), 2u);
  const std::string plain_cg = procs_of[std::to_string(Find(plain.id)->pid)];
  const std::string limited_cg = procs_of[std::to_string(Find(limited.id)->pid)];
  ASSERT_FALSE(plain_cg.empty());
  ASSERT_FALSE(limited_cg.empty());
  EXPECT_FALSE(std::filesystem::exists(plain_cg + "/memory.max"));
  EXPECT_EQ(ReadFile(limited_cg + "/memory.max"), std::to_string(512LL << 20));
}

// A launcher whose Start returns late, as on an agent busy with other work: whatever the manager
// does only after Start returns happens after the program already ran.
class LateLauncher : public launch::Launcher {
 public:
  Result<launch::ProcessId> Start(const launch::LaunchRequest& request) override {
    Result<launch::ProcessId> p = real_.Start(request);
    std::this_thread::sleep_for(500ms);
    return p;
  }
  std::optional<int> TryWait(const launch::ProcessId& p) override { return real_.TryWait(p); }
  bool Alive(const launch::ProcessId& p) override { return real_.Alive(p); }
  Result<std::optional<int>> Stop(const launch::ProcessId& p,
                                  std::chrono::milliseconds grace) override {
    return real_.Stop(p, grace);
  }

 private:
  launch::ProcessLauncher real_;
};

// The move into the cgroup happens before the program runs (the launch's record hook), so no
// process the workload forks at its start is born outside it, whatever the agent's timing.
TEST_F(WorkloadManagerTest, AWorkloadIsInItsCgroupBeforeItsProgramRuns) {
  const std::string root = dir_ + "/cgroup-v2";
  std::filesystem::create_directories(root);
  std::ofstream(root + "/cgroup.controllers") << "cpu memory";
  options_.cgroup_root = root;
  static LateLauncher late;  // outlives the manager, whichever way the test ends
  manager_ = std::make_unique<WorkloadManager>(options_, late, SystemClock::Get(), *gpus_);
  // The program's first act: read which pid its cgroup holds, next to its own.
  auto w = ShellCopy("acct/ic/early", "echo \"$(cat " + root + "/carve/*/cgroup.procs 2>&1)\" > " +
                                          dir_ + "/seen; echo $$ >> " + dir_ + "/seen; exec sleep 30");
  Apply({w});
  ASSERT_TRUE(Eventually([&] { return std::ranges::count(ReadFile(dir_ + "/seen"), '\n') >= 2; }));
  std::istringstream seen(ReadFile(dir_ + "/seen"));
  std::string in_cgroup, self;
  std::getline(seen, in_cgroup);
  std::getline(seen, self);
  EXPECT_EQ(in_cgroup, self) << "the program ran before it was placed in its cgroup";
  manager_->StopAll();
  manager_.reset();
}

// A workload whose processes died while no agent ran leaves an empty cgroup behind; the next
// agent removes it with the workload's directory. On this machine's real hierarchy: an empty
// directory in a real cgroup tree is what rmdir removes, a plain directory is not.
TEST_F(WorkloadManagerTest, TheNextAgentRemovesTheCgroupOfAWorkloadThatDiedWithoutOne) {
  options_.cgroup_root = "/sys/fs/cgroup";
  auto w = ShellCopy("acct/ic/swept-" + std::to_string(::getpid()), "exec sleep 30");
  ASSERT_TRUE(Eventually([&] {
    Apply({w});
    return Find(w.id)->pid > 0;
  }));
  const int pid = Find(w.id)->pid;
  std::vector<std::string> cgroups;  // the workload's: v2's one, or v1's cpu and memory
  for (const char* parent : {"/sys/fs/cgroup/carve/", "/sys/fs/cgroup/cpu/carve/",
                             "/sys/fs/cgroup/memory/carve/"}) {
    const std::string dir = parent + WorkloadDirName(w.id);
    if (std::filesystem::exists(dir)) cgroups.push_back(dir);
  }
  if (cgroups.empty()) {
    manager_->StopAll();
    GTEST_SKIP() << "no cgroup can be created here (not root, or a container)";
  }
  RestartAgent();
  ::kill(-pid, SIGKILL);  // It dies while no agent runs, and its parent (this test) reaps it.
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
  Apply({});
  for (const std::string& dir : cgroups) EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/data/workloads/" + WorkloadDirName(w.id)));
}

// The same name under two accounts (or two incarnations) never shares a directory.
TEST_F(WorkloadManagerTest, TwoOwnersOfOneNameWriteTwoLogs) {
  auto a = ShellCopy("acct-a/ic-test/1", "echo from-a; exec sleep 30");
  auto b = ShellCopy("acct-b/ic-test/1", "echo from-b; exec sleep 30");
  Apply({a, b});
  const std::string dir_b = Find(b.id)->log_dir;
  ASSERT_NE(Find(a.id)->log_dir, dir_b);
  ASSERT_TRUE(Eventually(
      [&] { return ReadFile(dir_b + "/stdout.log").find("from-b") != std::string::npos; }));
  EXPECT_EQ(ReadFile(dir_b + "/stdout.log").find("from-a"), std::string::npos);
}

TEST_F(WorkloadManagerTest, ACrashedCopyIsRestartedWithBackoffAndAnEvent) {
  auto w = ShellCopy("acct/ic-test/4", "exit 3");
  Apply({w});
  std::vector<std::string> events;
  ASSERT_TRUE(Eventually([&] {
    Apply({w});
    for (auto& e : Manager().TakeEvents()) events.push_back(e);
    return Find(w.id)->restarts >= 2;
  }));
  auto s = Find(w.id);
  ASSERT_GE(s->exit_codes.size(), 2u);
  EXPECT_EQ(s->exit_codes[0], 3);
  EXPECT_TRUE(HasEvent(events, "exited with status 3, restarting in")) << events.size();
}

TEST_F(WorkloadManagerTest, ATaskThatSucceedsIsNotRestarted) {
  auto w = ShellCopy("acct/job/5", "exit 0");
  w.kind = "task";
  w.restart = "on-failure";
  Apply({w});
  ASSERT_TRUE(Eventually([&] {
    Apply({w});
    return Find(w.id)->state == "succeeded";
  }));
  EXPECT_EQ(Find(w.id)->exit_codes, std::vector<int>{0});
  EXPECT_EQ(Find(w.id)->restarts, 0);
}

TEST_F(WorkloadManagerTest, ANewManagerAdoptsDesiredProcessesAndKillsTheOthers) {
  auto keep = ShellCopy("acct/ic-test/6", "exec sleep 30");
  auto drop = ShellCopy("acct/ic-test/7", "exec sleep 30");
  drop.index = 1;
  Apply({keep, drop});
  const int keep_pid = Find(keep.id)->pid;
  const int drop_pid = Find(drop.id)->pid;
  const int keep_port = Find(keep.id)->port;
  manager_.reset();  // The agent goes away; its processes stay.
  ASSERT_TRUE(ProcessExists(keep_pid));
  ASSERT_TRUE(ProcessExists(drop_pid));

  Apply({keep});
  EXPECT_FALSE(ProcessExists(drop_pid));
  auto s = Find(keep.id);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, keep_pid);
  EXPECT_EQ(s->port, keep_port);
  EXPECT_EQ(s->state, "running");
  EXPECT_TRUE(HasEvent(Manager().TakeEvents(), "no longer desired"));
}

// A Ray head's shape: a second port it listens on, a file it reads, and a status page the agent
// reads and reports. An adopted process keeps its ports.
TEST_F(WorkloadManagerTest, NamedPortsFilesAndTheStatusUrlReachTheProcessAndTheReport) {
  const std::string server = dir_ + "/status_server.py";
  std::ofstream(server) << R"(import http.server, sys
body = open(sys.argv[2], 'rb').read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == '/api/status' else 404)
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
)";
  protocol::WorkloadDesired w;
  w.id = "acct/job/head-0.1";
  w.kind = "task";
  w.name = "q-job";
  w.command = {"/usr/bin/python3", server, "{port_dashboard}", "{file_conf}"};
  w.health_check = false;
  w.ports = {"dashboard"};
  w.files = {{"conf", R"({"applications": {}})"}};
  w.status_url = "http://127.0.0.1:{port_dashboard}/api/status";
  Apply({w});
  ASSERT_TRUE(Eventually([&] {
    Apply({w});
    return Find(w.id)->status_body == R"({"applications": {}})";
  })) << Find(w.id)->status_body;
  const auto s = Find(w.id).value();
  ASSERT_TRUE(s.ports.contains("dashboard"));
  EXPECT_NE(s.ports.at("dashboard"), s.port);

  manager_.reset();
  Apply({w});
  const auto adopted = Find(w.id).value();
  EXPECT_EQ(adopted.pid, s.pid);
  EXPECT_EQ(adopted.ports, s.ports);
}

TEST_F(WorkloadManagerTest, APortOrFileNameThatIsNoPlaceholderFailsNamingIt) {
  auto w = ShellCopy("acct/job/bad", "exec sleep 30");
  w.files = {{"../escape", "x"}};
  Apply({w});
  EXPECT_EQ(Find(w.id)->state, "failed");
  EXPECT_EQ(Find(w.id)->message,
            "workload acct/job/bad: file name '../escape' must be 1 or more of [a-z0-9_]");
}

TEST_F(WorkloadManagerTest, PidFilesAreNotTouchedBeforeTheFirstDesiredState) {
  auto w = ShellCopy("acct/ic-test/8", "exec sleep 30");
  Apply({w});
  const int pid = Find(w.id)->pid;
  manager_.reset();
  Manager().Poll();  // No desired state yet: nothing is adopted or killed.
  EXPECT_TRUE(Manager().Statuses().empty());
  EXPECT_TRUE(ProcessExists(pid));
  Apply({w});
  EXPECT_EQ(Find(w.id)->pid, pid);
}

TEST_F(WorkloadManagerTest, AnImageWithoutPodmanOrDockerFailsWithAClearMessage) {
  options_.command.search_path = dir_;  // Holds neither.
  protocol::WorkloadDesired w;
  w.id = "acct/ic-img/1";
  w.name = "ic-img";
  w.image = "registry.example/model:1";
  Apply({w});
  auto s = Find(w.id);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, "failed");
  EXPECT_EQ(s->message,
            "image registry.example/model:1 needs podman or docker on node node-a; neither is "
            "installed");
}

// A container that ignores SIGTERM outlives its killed `podman run` (conmon holds it): once the
// client is gone the agent removes the container by its name. The podman here records its calls,
// and its `run` ignores SIGTERM as such a container would.
TEST_F(WorkloadManagerTest, StoppingAnImageCopyRemovesItsContainerByName) {
  const std::string calls = dir_ + "/podman-calls";
  {
    std::ofstream script(dir_ + "/podman");
    script << "#!/bin/sh\nif [ \"$1\" = run ]; then trap '' TERM; fi\necho \"$*\" >> " << calls
           << "\nif [ \"$1\" = run ]; then exec sleep 30; fi\n";
  }
  std::filesystem::permissions(dir_ + "/podman", std::filesystem::perms::owner_all);
  options_.command.search_path = dir_;
  options_.stop_grace = 200ms;
  protocol::WorkloadDesired w;
  w.id = "acct/ic-img/2";
  w.name = "ic-img";
  w.image = "localhost/model:1";
  Apply({w});
  const auto started = Find(w.id);
  ASSERT_TRUE(started.has_value());
  ASSERT_GT(started->pid, 0) << started->message;
  // Stop only once the fake client ignores SIGTERM and has logged its run (it sets the trap
  // first): a signal before that would end the script before its first line.
  ASSERT_TRUE(Eventually([&] {
    std::ifstream f(calls);
    std::string first;
    return std::getline(f, first) && first.rfind("run ", 0) == 0;
  }));
  Apply({});
  EXPECT_FALSE(ProcessExists(started->pid));
  std::ifstream in(calls);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u) << (lines.empty() ? "" : lines[0]);
  EXPECT_EQ(lines[0].rfind("run --rm --name " + ContainerName(w.id) + " ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1], "rm -f " + ContainerName(w.id));
}

TEST_F(WorkloadManagerTest, AHealthCheckedCopyRunsOnlyOncePingAnswers) {
  const std::string server = testing::WritePingServer(dir_);
  const std::string sick = dir_ + "/sick";
  protocol::WorkloadDesired w;
  w.id = "acct/ic-ping/1";
  w.name = "ic-ping";
  w.command = {"/usr/bin/python3", server, "{port}", sick};
  std::ofstream(sick) << "";
  Apply({w});
  EXPECT_EQ(Find(w.id)->state, "starting");
  std::filesystem::remove(sick);
  ASSERT_TRUE(Eventually([&] {
    Manager().Poll();
    return Find(w.id)->state == "running";
  }));
  std::ofstream(sick) << "";  // Three failed probes in a row take it out of rotation.
  ASSERT_TRUE(Eventually([&] {
    Manager().Poll();
    return Find(w.id)->state == "starting";
  }));
  EXPECT_NE(Find(w.id)->message.find("unhealthy"), std::string::npos);
  EXPECT_GT(Find(w.id)->pid, 0);
}

// Enforcement fails closed: an interposer share on an agent without the library does not start
// unenforced; it fails, saying why and how to allow unenforced shares.
TEST_F(WorkloadManagerTest, AnInterposerShareWithoutTheLibraryFailsNamingWhy) {
  options_.interposer_path = "";
  auto w = ShellCopy("acct/ic-share/1", "env > {out}; exec sleep 30");
  w.values["out"] = dir_ + "/env.txt";
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{30, 2048, "interposer", false};
  Apply({w});
  auto s = Find(w.id);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, "failed");
  EXPECT_EQ(s->pid, 0);
  EXPECT_NE(s->message.find("no libcarve-mgpu.so"), std::string::npos) << s->message;
  EXPECT_NE(s->message.find("core 30%, memory 2048 MiB"), std::string::npos) << s->message;
  EXPECT_NE(s->message.find("enforcement \"none\""), std::string::npos) << s->message;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/env.txt")) << "the worker ran unenforced";
  Apply({w});  // Terminal until its desired entry changes: it is not retried unenforced.
  EXPECT_EQ(Find(w.id)->state, "failed");
  EXPECT_EQ(Find(w.id)->pid, 0);
}

TEST_F(WorkloadManagerTest, AnInterposerShareWithAnUnreadableLibraryFailsNamingIt) {
  options_.interposer_path = dir_ + "/no-such/libcarve-mgpu.so";
  auto w = ShellCopy("acct/ic-share/5", "exec sleep 30");
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{30, 2048, "interposer", false};
  Apply({w});
  auto s = Find(w.id);
  EXPECT_EQ(s->state, "failed");
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
  w.device.share = protocol::ShareSpec{30, 2048, "none", false};
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
  EXPECT_EQ(Find(w.id)->state, "running");
  EXPECT_EQ(Find(w.id)->memory_used_mib, -1);
}

TEST_F(WorkloadManagerTest, AShareWithAnUnknownEnforcementFailsNamingTheAcceptedOnes) {
  auto w = ShellCopy("acct/ic-share/6", "exec sleep 30");
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{30, 2048, "hami", false};
  Apply({w});
  EXPECT_EQ(Find(w.id)->state, "failed");
  EXPECT_NE(Find(w.id)->message.find("'hami' is not one of"), std::string::npos)
      << Find(w.id)->message;
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
  w.device.share = protocol::ShareSpec{50, 1024, "interposer", false};
  Apply({w});
  auto s = Find(w.id);
  ASSERT_EQ(s->state, "running") << s->message;
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
  limited.device.share = protocol::ShareSpec{50, 1024, "interposer", false};
  auto whole = ShellCopy("acct/ic-share/4", "exec sleep 30");
  whole.device.gpus = {1};
  whole.device.share = protocol::ShareSpec{100, 1024, "interposer", false};
  Apply({limited, whole});
  auto first = Find(limited.id);  // Every status report samples the rate.
  ASSERT_EQ(first->state, "running") << first->message;
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
  hostile.device.share = protocol::ShareSpec{50, 1024, "interposer", false};
  auto fair = ShellCopy("acct/ic-fair/1", "exec sleep 30");
  fair.device.gpus = {1};
  fair.device.share = protocol::ShareSpec{50, 1024, "interposer", false};
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
  EXPECT_EQ(s->state, "failed");
  EXPECT_EQ(s->pid, 0);
  EXPECT_NE(s->message.find("held 4096 MiB of device memory on GPU 0 (pids " +
                            std::to_string(worker) + ", " + std::to_string(child) + ")"),
            std::string::npos)
      << s->message;
  EXPECT_NE(s->message.find("quota of 1024 MiB plus the 512 MiB"), std::string::npos)
      << s->message;
  EXPECT_TRUE(HasEvent(Manager().TakeEvents(), "held 4096 MiB"));
  EXPECT_TRUE(Eventually([&] { return Gone(worker) && Gone(child); }))
      << "the worker or its child outlived the stop";
  EXPECT_EQ(Find(fair.id)->state, "running") << Find(fair.id)->message;
  EXPECT_FALSE(Gone(fair_pid));
  Apply({hostile, fair});  // Terminal until its desired entry changes: not started again.
  EXPECT_EQ(Find(hostile.id)->state, "failed");
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
  w.device.share = protocol::ShareSpec{50, 1024, "interposer", false};
  Apply({w});
  const int worker = Find(w.id)->pid;
  ASSERT_NE(worker, 0) << Find(w.id)->message;
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(dir_ + "/rewritten"); }));
  Manager().HoldShareQuotas(gpus_->Statuses(true));
  auto s = Find(w.id);
  EXPECT_EQ(s->state, "failed");
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
  w.device.share = protocol::ShareSpec{50, 1024, "interposer", false};
  Apply({w});
  const int worker = Find(w.id)->pid;
  ASSERT_NE(worker, 0) << Find(w.id)->message;
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(dir_ + "/rewritten"); }));
  RestartAgent();
  Apply({w});
  auto s = Find(w.id);
  EXPECT_EQ(s->state, "failed");
  EXPECT_NE(s->message.find("the worker rewrote its own limits, so it is not adopted"),
            std::string::npos)
      << s->message;
  EXPECT_TRUE(Eventually([&] { return Gone(worker); })) << "the unadopted worker still runs";
}

TEST_F(WorkloadManagerTest, AnMpsShareWithoutTheControlBinaryFailsNamingIt) {
  options_.mps_control_path = dir_ + "/nvidia-cuda-mps-control";
  auto w = ShellCopy("acct/ic-mps/1", "exec sleep 30");
  w.device.gpus = {0};
  w.device.share = protocol::ShareSpec{30, 1024, "mps", false};
  Apply({w});
  auto s = Find(w.id);
  EXPECT_EQ(s->state, "failed");
  EXPECT_NE(s->message.find(options_.mps_control_path), std::string::npos) << s->message;
}

TEST_F(WorkloadManagerTest, ACopyWaitsForItsPartitionToBeCarved) {
  auto w = ShellCopy("acct/ic-test/9", "exec sleep 30");
  w.device.gpus = {0};
  w.device.partition = 0;
  Apply({w});  // No GPU entry yet.
  EXPECT_EQ(Find(w.id)->state, "starting");
  EXPECT_EQ(Find(w.id)->pid, 0);
  EXPECT_NE(Find(w.id)->message.find("waiting for partition 0 of GPU 0"), std::string::npos);
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
  w.device.partition = 0;
  Apply({w});
  const int pid = Find(w.id)->pid;
  ASSERT_GT(pid, 0);
  RestartAgent();
  ASSERT_TRUE(ProcessExists(pid));

  Apply({w});
  auto s = Find(w.id);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, pid);
  EXPECT_EQ(s->state, "running");
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
  w.device.partition = 0;
  Apply({w});
  const int pid = Find(w.id)->pid;
  ASSERT_GT(pid, 0);
  RestartAgent();
  gpu_desired_.clear();  // The layout does not come: the copy keeps waiting for its partition.
  Apply({w});
  EXPECT_EQ(Find(w.id)->state, "starting");
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
  w.device.partition = 0;
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
  w.device.partition = 0;
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
