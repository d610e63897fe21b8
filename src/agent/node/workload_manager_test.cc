// WorkloadManager: launching, logs, cgroups, restarts, named ports and files, images and health
// checks. The fixture: workload_manager_test_fixture.h.
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

TEST_F(WorkloadManagerTest, StartsACopyBoundToTheMigDeviceOfItsPartition) {
  gpu_desired_ = {{1, true, {{"3g.20gb", 0}, {"3g.20gb", 4}}}};
  auto w = ShellCopy("acct/ic-test/1", "env > {out}; echo carve={carve}; exec sleep 30");
  w.values["out"] = dir_ + "/env.txt";
  w.device.gpus = {1};
  w.device.partition_start = 4;  // The second 3g.20gb.
  Apply({w});
  ASSERT_TRUE(Eventually(
      [&] { return ReadFile(dir_ + "/env.txt").find("CARVE_PORT") != std::string::npos; }));
  const std::string env = ReadFile(dir_ + "/env.txt");
  EXPECT_NE(env.find("CUDA_VISIBLE_DEVICES=" + gpus_->PartitionUuid(1, 4).value()),
            std::string::npos)
      << env;
  auto s = Find(w.id);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, protocol::WorkloadState::kRunning);
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
  w.kind = protocol::WorkloadKind::kTask;
  w.restart = protocol::RestartPolicy::kNever;
  Apply({w});
  const std::string log_dir = Find(w.id)->log_dir;
  ASSERT_TRUE(Eventually([&] {
    Apply({w});
    return Find(w.id)->state == protocol::WorkloadState::kSucceeded;
  }));
  Apply({});
  ASSERT_NE(ReadFile(log_dir + "/stdout.log").find("first-incarnation"), std::string::npos);
  w.command = {"/bin/sh", "-c", "echo second-incarnation"};
  Apply({w});
  ASSERT_TRUE(Eventually([&] {
    Apply({w});
    return Find(w.id)->state == protocol::WorkloadState::kSucceeded;
  }));
  EXPECT_EQ(ReadFile(log_dir + "/stdout.log"), "second-incarnation\n");
}

// A finished task's log stays while the server lists it (its job exists) and goes when it does
// not (the job or its queue was deleted); a running workload's log is never removed.
TEST_F(WorkloadManagerTest, AnEndedTasksLogGoesWhenTheServerNoLongerListsIt) {
  auto done = ShellCopy("acct/q/job-0001/task-0.0", "echo finished");
  done.kind = protocol::WorkloadKind::kTask;
  done.restart = protocol::RestartPolicy::kNever;
  auto other = ShellCopy("acct/q/job-0002/task-0.0", "echo other");
  other.kind = protocol::WorkloadKind::kTask;
  other.restart = protocol::RestartPolicy::kNever;
  Apply({done, other});
  const std::string done_dir = Find(done.id)->log_dir;
  const std::string other_dir = Find(other.id)->log_dir;
  ASSERT_TRUE(Eventually([&] {
    Apply({done, other});
    return Find(done.id)->state == protocol::WorkloadState::kSucceeded &&
           Find(other.id)->state == protocol::WorkloadState::kSucceeded;
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
  w.kind = protocol::WorkloadKind::kTask;
  w.restart = protocol::RestartPolicy::kOnFailure;
  Apply({w});
  ASSERT_TRUE(Eventually([&] {
    Apply({w});
    return Find(w.id)->state == protocol::WorkloadState::kSucceeded;
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
  EXPECT_EQ(s->state, protocol::WorkloadState::kRunning);
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
  w.kind = protocol::WorkloadKind::kTask;
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
  EXPECT_EQ(Find(w.id)->state, protocol::WorkloadState::kFailed);
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
  EXPECT_EQ(s->state, protocol::WorkloadState::kFailed);
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
  EXPECT_EQ(Find(w.id)->state, protocol::WorkloadState::kStarting);
  std::filesystem::remove(sick);
  ASSERT_TRUE(Eventually([&] {
    Manager().Poll();
    return Find(w.id)->state == protocol::WorkloadState::kRunning;
  }));
  std::ofstream(sick) << "";  // Three failed probes in a row take it out of rotation.
  ASSERT_TRUE(Eventually([&] {
    Manager().Poll();
    return Find(w.id)->state == protocol::WorkloadState::kStarting;
  }));
  EXPECT_NE(Find(w.id)->message.find("unhealthy"), std::string::npos);
  EXPECT_GT(Find(w.id)->pid, 0);
}

// Enforcement fails closed: an interposer share on an agent without the library does not start
// unenforced; it fails, saying why and how to allow unenforced shares.

}  // namespace
}  // namespace carve::agent::node
