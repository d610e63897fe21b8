#include "agent/node/workload_manager.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "agent/launch/health.h"
#include "agent/launch/pid_file.h"
#include "agent/launch/process_launcher.h"
#include "agent/launch/workload_logs.h"
#include "agent/launch/workload_spec.h"
#include "agent/node/workload_state.h"
#include "interposer/process_probe.h"

namespace carve::agent::node {
namespace fs = std::filesystem;

namespace {

bool PingOnce(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(0, 300'000);
  client.set_read_timeout(1, 0);
  auto r = client.Get("/ping");
  return r && r->status == 200;
}

// The last lines a workload wrote (stderr, else stdout), at most kMaxLogTail bytes: why it
// cannot start, in its own words. "" when it wrote nothing.
std::string LogTail(const std::string& log_dir) {
  if (log_dir.empty()) return "";
  for (const char* name : {"stderr.log", "stdout.log"}) {
    Result<std::string> tail = launch::TailFile(log_dir + "/" + name, 5);
    if (!tail || tail->empty()) continue;
    std::string text = std::move(*tail);
    if (text.size() > protocol::kMaxLogTail) text = text.substr(text.size() - protocol::kMaxLogTail);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
  return "";
}

// The names of named ports and files become placeholders, so they follow the placeholder rule.
Status CheckName(std::string_view what, const std::string& name, const std::string& id) {
  const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (ok) return OkStatus();
  return InvalidArgument(
      fmt::format("workload {}: {} name '{}' must be 1 or more of [a-z0-9_]", id, what, name));
}

// GET of an http://127.0.0.1:PORT/PATH (or localhost) URL: the body, at most kMaxStatusBody
// bytes, or "error: ..." saying why there is none.
std::string ReadStatusUrl(const std::string& url) {
  std::string rest;
  for (std::string_view prefix : {"http://127.0.0.1:", "http://localhost:"}) {
    if (url.starts_with(prefix)) rest = url.substr(prefix.size());
  }
  const size_t slash = rest.find('/');
  int port = 0;
  const std::string port_text = rest.substr(0, slash);
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (rest.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port <= 0 || port > 65535) {
    return "error: status_url " + url + " is not http://127.0.0.1:PORT/PATH";
  }
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(0, 300'000);
  client.set_read_timeout(1, 0);
  auto r = client.Get(slash == std::string::npos ? "/" : rest.substr(slash));
  if (!r) return "error: GET " + url + ": " + httplib::to_string(r.error());
  if (r->status != 200) return fmt::format("error: GET {} answered {}", url, r->status);
  std::string body = std::move(r->body);
  if (body.size() > protocol::kMaxStatusBody) {
    return fmt::format("error: GET {} answered {} bytes, more than the {} reported", url,
                       body.size(), protocol::kMaxStatusBody);
  }
  return body;
}

launch::RestartPolicy PolicyOf(protocol::RestartPolicy restart) {
  switch (restart) {
    case protocol::RestartPolicy::kNever:
      return launch::RestartPolicy::kNever;
    case protocol::RestartPolicy::kOnFailure:
      return launch::RestartPolicy::kOnFailure;
    case protocol::RestartPolicy::kAlways:
      break;
  }
  return launch::RestartPolicy::kAlways;
}

}  // namespace

WorkloadManager::WorkloadManager(WorkloadOptions options, launch::Launcher& launcher,
                                 const Clock& clock, const GpuApplier& gpus)
    : options_(std::move(options)),
      launcher_(launcher),
      clock_(clock),
      gpus_(gpus),
      cgroups_(options_.cgroup_root),
      mps_(options_.mps_control_path) {}

WorkloadManager::~WorkloadManager() = default;

std::string WorkloadManager::DirOf(const std::string& id) const {
  return options_.command.data_dir + "/workloads/" + WorkloadDirName(id);
}

void WorkloadManager::AddEvent(std::string event) {
  spdlog::info("{}", event);
  events_.push_back(std::move(event));
  changed_ = true;
}

void WorkloadManager::AdoptFromPidFiles(const std::vector<protocol::WorkloadDesired>& desired) {
  const fs::path root = options_.command.data_dir + "/workloads";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, ec)) {
    std::ifstream id_file(entry.path() / "id");
    std::string id;
    if (!std::getline(id_file, id) || id.empty()) continue;
    const protocol::WorkloadDesired* want = nullptr;
    for (const auto& d : desired) {
      if (d.id == id) want = &d;
    }
    auto r = launch::ReconcilePidFile((entry.path() / "pid").string(), launcher_, want != nullptr,
                                      options_.stop_grace);
    if (!r) {
      spdlog::warn("workload {}: pid file {}: {}", id, (entry.path() / "pid").string(),
                   r.error().message);
      continue;
    }
    if (r->outcome == launch::Reconcile::kAdopted) {
      auto w = std::make_unique<Workload>();
      w->desired = *want;
      w->dir = entry.path().string();
      w->adopting = r->record;
      Start(*w);
      workloads_[id] = std::move(w);
      continue;
    }
    if (r->outcome == launch::Reconcile::kKilled) {
      AddEvent(fmt::format("stopped {} (pid {}): left from an earlier agent, no longer desired", id,
                           r->record->process.pid));
    }
    // Its cgroup goes too: empty now that its processes are gone (rmdir refuses one that is not).
    if (Status s = cgroups_.Remove(entry.path().filename().string()); !s) {
      spdlog::warn("workload {}: {}", id, s.error().message);
    }
    fs::remove_all(entry.path(), ec);
  }
}

void WorkloadManager::StopUndesired(const std::vector<protocol::WorkloadDesired>& desired) {
  if (!reconciled_) {
    AdoptFromPidFiles(desired);
    reconciled_ = true;
  }
  std::set<std::string> wanted;
  for (const auto& d : desired) wanted.insert(d.id);
  for (auto it = workloads_.begin(); it != workloads_.end();) {
    if (wanted.contains(it->first)) {
      ++it;
      continue;
    }
    Stop(*it->second);
    AddEvent(
        fmt::format("stopped {} ({}): no longer desired", Label(it->second->desired), it->first));
    // A copy's id is never desired again (a replacement gets a new one), and the server has the
    // tail it reported while the copy could not start: its logs go with it. A task's stay, for
    // its job's logs route after the job ended; StartMissing clears them if its id comes back.
    if (it->second->desired.kind != protocol::WorkloadKind::kTask) {
      if (Status s = launch::RemoveWorkloadLogs(options_.command.data_dir, it->first); !s) {
        spdlog::warn("{}: {}", it->first, s.error().message);
      }
    }
    it = workloads_.erase(it);
  }
}

std::vector<protocol::WorkloadDesired> WorkloadManager::Placeholders(
    const std::vector<protocol::UnreadableWorkload>& unreadable) {
  std::vector<protocol::WorkloadDesired> out;
  for (const auto& u : unreadable) {
    protocol::WorkloadDesired d;
    d.id = u.id;
    d.name = u.name;
    d.index = u.index;
    out.push_back(std::move(d));
  }
  return out;
}

void WorkloadManager::RefuseUnreadable(
    const std::vector<protocol::UnreadableWorkload>& unreadable) {
  for (const auto& u : unreadable) {
    auto it = workloads_.find(u.id);
    if (it == workloads_.end()) {
      auto w = std::make_unique<Workload>();
      w->dir = DirOf(u.id);
      it = workloads_.emplace(u.id, std::move(w)).first;
    }
    Workload& w = *it->second;
    if (w.failed == u.reason && !w.supervisor) continue;  // Refused already.
    if (w.supervisor) {
      Stop(w);
      w.supervisor.reset();
    }
    w.desired = Placeholders({u}).front();
    w.failed = u.reason;
    w.message = u.reason;
    changed_ = true;
    AddEvent(fmt::format("{} ({}) could not start: this agent cannot read it: {}", Label(w.desired),
                         u.id, u.reason));
  }
}

int WorkloadManager::RemoveUnlistedLogs(const std::vector<protocol::WorkloadDesired>& desired,
                                        const std::vector<std::string>& kept) {
  std::set<std::string_view> listed(kept.begin(), kept.end());
  for (const auto& d : desired) listed.insert(d.id);
  int removed = 0;
  for (const launch::LogOwner& log : launch::ListWorkloadLogs(options_.command.data_dir)) {
    if (listed.contains(log.id) || workloads_.contains(log.id)) continue;
    if (Status s = launch::RemoveWorkloadLogs(options_.command.data_dir, log.id); !s) {
      spdlog::warn("{}: {}", log.id, s.error().message);
      continue;
    }
    AddEvent(fmt::format("removed the logs of {} ({} #{}): the server no longer lists them", log.id,
                         log.name, log.index));
    ++removed;
  }
  return removed;
}

void WorkloadManager::StartMissing(const std::vector<protocol::WorkloadDesired>& desired) {
  for (const auto& d : desired) {
    auto it = workloads_.find(d.id);
    if (it == workloads_.end()) {
      // Taken on afresh (not adopted): whatever a directory of this id holds was written by an
      // earlier incarnation (a queue deleted and created again reuses its job ids), and a new
      // workload starts with an empty log.
      if (Status s = launch::RemoveWorkloadLogs(options_.command.data_dir, d.id); !s) {
        spdlog::warn("{}: {}", d.id, s.error().message);
      }
      auto w = std::make_unique<Workload>();
      w->desired = d;
      w->dir = DirOf(d.id);
      Workload& ref = *w;
      workloads_[d.id] = std::move(w);
      Start(ref);
      continue;
    }
    Workload& w = *it->second;
    if (w.supervisor) continue;  // Same id: the same process may stay.
    if (!w.waiting.empty() || (!w.failed.empty() && !(w.desired == d))) {
      w.desired = d;
      Start(w);
    }
  }
}

void WorkloadManager::Start(Workload& w) {
  const std::string label = Label(w.desired);
  w.waiting.clear();
  w.failed.clear();
  if (w.adopting && !launcher_.Alive(w.adopting->process)) {
    AddEvent(
        fmt::format("{} ({}): pid {} of an earlier agent exited before it was adopted; "
                    "starting it again",
                    label, w.desired.id, w.adopting->process.pid));
    w.adopting.reset();
    w.process.reset();
  }
  const std::optional<launch::PidRecord> adopt = w.adopting;
  if (adopt) w.process = adopt->process;
  std::error_code ec;
  fs::create_directories(w.dir, ec);
  std::ofstream(w.dir + "/id") << w.desired.id << "\n";
  auto fail = [&](const Error& e) {
    if (e.code == ErrorCode::kUnavailable) {
      if (w.waiting != e.message) changed_ = true;
      w.waiting = e.message;
      return;
    }
    w.failed = e.message;
    w.message = e.message;
    AddEvent(fmt::format("{} ({}) could not start: {}", label, w.desired.id, e.message));
    // A process that cannot be supervised is stopped, not left running unseen.
    StopAdopting(w);
  };
  Result<launch::DeviceBinding> binding = Bind(w);
  if (!binding) return fail(binding.error());
  int port = adopt ? adopt->port : 0;
  if (!adopt) {
    Result<int> free_port = launch::FindFreePort();
    if (!free_port) return fail(free_port.error());
    port = *free_port;
  }
  // Named ports and files become values of the command's template. An adopted process keeps the
  // ports it was started with.
  protocol::WorkloadDesired run = w.desired;
  w.ports.clear();
  for (const auto& name : w.desired.ports) {
    if (Status s = CheckName("port", name, w.desired.id); !s) return fail(s.error());
    int picked = 0;
    if (adopt && adopt->ports.contains(name)) {
      picked = adopt->ports.at(name);
    } else {
      Result<int> free_port = launch::FindFreePort();
      if (!free_port) return fail(free_port.error());
      picked = *free_port;
    }
    w.ports[name] = picked;
    run.values["port_" + name] = std::to_string(picked);
  }
  for (const auto& [name, contents] : w.desired.files) {
    if (Status s = CheckName("file", name, w.desired.id); !s) return fail(s.error());
    const fs::path path = fs::path(w.dir) / "files" / name;
    fs::create_directories(path.parent_path(), ec);
    std::ofstream out(path, std::ios::trunc);
    out << contents;
    if (!out.flush()) {
      return fail(Internal(fmt::format("cannot write {} for {}", path.string(), w.desired.id)));
    }
    run.values["file_" + name] = path.string();
  }
  w.status_url.clear();
  if (!w.desired.status_url.empty()) {
    auto values = run.values;
    values["port"] = std::to_string(port);
    Result<std::vector<std::string>> url = launch::ExpandCommand({w.desired.status_url}, values);
    if (!url) return fail(url.error());
    w.status_url = url->front();
  }
  Result<launch::LaunchRequest> request = BuildLaunchRequest(run, port, *binding, options_.command);
  if (request && options_.sandbox) {
    request = options_.sandbox->Wrap(run, w.dir, *binding, std::move(request).value());
  }
  if (!request) return fail(request.error());
  // Other accounts' processes are kept off the workload's ports before it listens on them.
  std::vector<int> ports = {port};
  for (const auto& [name, picked] : w.ports) ports.push_back(picked);
  if (options_.sandbox) {
    if (Status s = options_.sandbox->GuardPorts(run, ports); !s) return fail(s.error());
  }
  // The pid file exists before the program runs, on every start and restart: an agent killed at
  // any point leaves either a record of the process or no process (launcher.h).
  // It is also placed in its cgroup there, so every process it forks is born inside.
  request->record = [this, &w, port](const launch::ProcessId& p) -> Status {
    CARVE_RETURN_IF_ERROR(launch::WritePidFile(w.dir + "/pid", {p, port, w.ports}));
    PlaceInCgroup(w, p.pid);
    return OkStatus();
  };
  w.log_dir = fs::path(request->stdout_path).parent_path().string();
  if (Status s = launch::WriteLogOwner(options_.command.data_dir,
                                       {w.desired.id, w.desired.name, w.desired.index, ""});
      !s) {
    spdlog::warn("{}: {}", w.desired.id, s.error().message);
  }
  launch::RestartRules rules;
  rules.policy = PolicyOf(w.desired.restart);
  rules.max_retries = w.desired.max_retries;
  rules.initial_backoff = options_.initial_backoff;
  rules.max_backoff = options_.max_backoff;
  w.supervisor =
      std::make_unique<launch::Supervisor>(label, launcher_, clock_, std::move(request).value(),
                                           rules, [this, &w](const launch::SupervisorEvent& e) {
                                             w.message = e.message;
                                             AddEvent(e.message);
                                           });
  if (adopt) {
    w.supervisor->Adopt(adopt->process);
    w.adopting.reset();
  } else if (Status s = w.supervisor->Start(); !s) {
    w.supervisor.reset();
    if (options_.sandbox) options_.sandbox->ReleasePorts(ports);
    fs::remove(w.dir + "/pid", ec);  // the process the hook recorded never ran the program
    return fail(s.error());
  }
  w.port = port;
  w.healthy = false;
  w.probe_failures = 0;
  w.process.reset();
  PollOne(w);  // Records the new process (and places an adopted one in its cgroup).
  AddEvent(fmt::format("{} {} ({}) pid {} port {}", adopt ? "adopted" : "started", label,
                       w.desired.id, w.process ? w.process->pid : 0, port));
}

void WorkloadManager::PollOne(Workload& w) {
  if (!w.supervisor) return;
  if (Status s = w.supervisor->Poll(); !s) w.message = s.error().message;
  if (options_.log_max_bytes > 0 && !w.log_dir.empty()) {
    for (const char* name : {"/stdout.log", "/stderr.log"}) {
      auto capped = launch::CapLog(w.log_dir + name, options_.log_max_bytes);
      if (!capped) spdlog::warn("{}: {}", w.desired.id, capped.error().message);
    }
  }
  const std::optional<launch::ProcessId> p = w.supervisor->process();
  if (p != w.process) {
    w.process = p;
    w.healthy = false;
    w.probe_failures = 0;
    changed_ = true;
    std::error_code ec;
    if (!p) {
      fs::remove(w.dir + "/pid", ec);
    } else {
      if (Status s = launch::WritePidFile(w.dir + "/pid", {*p, w.port, w.ports}); !s) {
        spdlog::warn("{}: {}", w.desired.id, s.error().message);
      }
      // A process this agent started was placed by the launch's record hook; an adopted one
      // may have lost its cgroup to the cleanup of the agent that started it.
      if (w.cgroup_pid != p->pid) PlaceInCgroup(w, p->pid);
    }
  }
  if (p && w.desired.health_check) Probe(w);
  if (p && !w.status_url.empty() && clock_.Now() >= w.next_status_read) {
    std::string body = ReadStatusUrl(w.status_url);
    if (body != w.status_body) {
      w.status_body = std::move(body);
      changed_ = true;
    }
    w.next_status_read = clock_.Now() + options_.probe_interval;
  }
}

// Every workload gets a cgroup of its own (its CPU and memory use are its own to read, and no
// process of it escapes by leaving its process group); limits where it has them. Only a limit
// that cannot be held is worth a warning.
void WorkloadManager::PlaceInCgroup(Workload& w, int pid) {
  w.cgroup_pid = pid;
  launch::HostLimits limits;
  if (w.desired.cpu_milli > 0) limits.cpu_millicores = w.desired.cpu_milli;
  if (w.desired.memory_mib > 0) limits.memory_bytes = w.desired.memory_mib * kMiB;
  const std::string cgroup = fs::path(w.dir).filename().string();
  if (limits.cpu_millicores || limits.memory_bytes) {
    cgroups_.ApplyOrWarn(cgroup, pid, limits);
  } else if (Status s = cgroups_.Apply(cgroup, pid, limits); !s) {
    spdlog::debug("{}: no cgroup of its own: {}", w.desired.id, s.error().message);
  }
}

void WorkloadManager::Probe(Workload& w) {
  const auto now = clock_.Now();
  if (now < w.next_probe) return;
  const bool ok = PingOnce(w.port);
  const std::string label = Label(w.desired);
  if (ok) {
    w.probe_failures = 0;
    if (!w.healthy) {
      w.healthy = true;
      w.ever_healthy = true;
      w.message = "healthy: GET /ping answered 200";
      AddEvent(fmt::format("{} ({}) is healthy on port {}", label, w.desired.id, w.port));
    }
    w.next_probe = now + options_.probe_interval;
    return;
  }
  if (!w.healthy) {
    w.next_probe = now + std::chrono::milliseconds(200);
    return;
  }
  w.next_probe = now + options_.probe_interval;
  if (++w.probe_failures >= options_.unhealthy_after) {
    w.healthy = false;
    w.message = fmt::format("unhealthy: {} health probes in a row failed", w.probe_failures);
    AddEvent(fmt::format("{} ({}) is {}; out of rotation", label, w.desired.id, w.message));
  }
}

void WorkloadManager::Poll() {
  for (auto& [id, w] : workloads_) PollOne(*w);
}

void WorkloadManager::StopAdopting(Workload& w) {
  if (!w.adopting) return;
  const launch::ProcessId p = w.adopting->process;
  w.adopting.reset();
  w.process.reset();
  if (auto stopped = launcher_.Stop(p, options_.stop_grace); !stopped) {
    spdlog::warn("stopping {} (pid {}, not adopted yet): {}", w.desired.id, p.pid,
                 stopped.error().message);
  }
  std::error_code ec;
  fs::remove(w.dir + "/pid", ec);
}

void WorkloadManager::Stop(Workload& w) {
  StopAdopting(w);
  if (w.supervisor) {
    if (Status s = w.supervisor->Stop(options_.stop_grace); !s) {
      spdlog::warn("stopping {}: {}", w.desired.id, s.error().message);
    }
  }
  if (!w.desired.image.empty()) RemoveContainer(w);
  if (options_.sandbox && w.port > 0) {  // Started: its ports were guarded (Start).
    std::vector<int> ports = {w.port};
    for (const auto& [name, picked] : w.ports) ports.push_back(picked);
    options_.sandbox->ReleasePorts(ports);
  }
  w.ledger.reset();
  w.core_rate.reset();
  std::error_code ec;
  (void)cgroups_.Remove(fs::path(w.dir).filename().string());  // Every workload has one.
  fs::remove_all(w.dir, ec);
}

// A container can outlive its `podman run` or `docker run`: when it ignores SIGTERM past the
// grace, the client is killed, and conmon (podman) or containerd-shim (docker) keep it running
// outside the client's process group, holding its partition and port. So once the client is
// gone the container is removed by the name it ran under. After a clean stop `run --rm` has
// removed it already, and the answer is "no such container"; both land in the copy's log.
void WorkloadManager::RemoveContainer(const Workload& w) {
  const std::string runtime = ContainerRuntime(options_.command.search_path);
  auto logs = launch::LogPathsFor(options_.command.data_dir, w.desired.id);
  if (runtime.empty() || !logs) return;
  launch::LaunchRequest rm{{runtime, "rm", "-f", ContainerName(w.desired.id)},
                           {{"PATH", options_.command.search_path}},
                           "",
                           logs->stdout_path,
                           logs->stderr_path,
                           {}};
  auto pid = launcher_.Start(rm);
  if (!pid) {
    spdlog::warn("removing the container of {}: {}", w.desired.id, pid.error().message);
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.stop_grace;
  while (!launcher_.TryWait(*pid)) {
    if (std::chrono::steady_clock::now() > deadline) {
      spdlog::warn("removing the container of {}: {} rm did not finish within {} ms", w.desired.id,
                   runtime, options_.stop_grace.count());
      (void)launcher_.Stop(*pid, std::chrono::milliseconds(0));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void WorkloadManager::StopAll() {
  for (auto& [id, w] : workloads_) Stop(*w);
  workloads_.clear();
  for (int gpu : mps_cards_) {
    auto uuid = gpus_.GpuUuid(gpu);
    if (!uuid) continue;
    if (auto dirs = mps::MpsDirsFor(options_.command.data_dir + "/mps", *uuid); dirs) {
      (void)mps_.Stop(*dirs, *uuid);
    }
  }
  mps_cards_.clear();
  changed_ = true;
}

std::vector<protocol::WorkloadStatus> WorkloadManager::Statuses() {
  std::vector<protocol::WorkloadStatus> out;
  for (const auto& [id, w] : workloads_) {
    protocol::WorkloadStatus s;
    s.id = id;
    s.port = w->port;
    s.log_dir = w->log_dir;
    s.message = w->message;
    if (!w->failed.empty()) {
      s.state = protocol::WorkloadState::kFailed;
      s.message = w->failed;
    } else if (!w->supervisor) {
      s.state = protocol::WorkloadState::kStarting;
      s.message = w->waiting;
    } else {
      switch (w->supervisor->state()) {
        case launch::CopyState::kStarting:
        case launch::CopyState::kRunning:
          s.state = w->desired.health_check && !w->healthy ? protocol::WorkloadState::kStarting
                                                           : protocol::WorkloadState::kRunning;
          break;
        case launch::CopyState::kBackoff:
          s.state = protocol::WorkloadState::kBackoff;
          break;
        case launch::CopyState::kSucceeded:
          s.state = protocol::WorkloadState::kSucceeded;
          break;
        case launch::CopyState::kFailed:
          s.state = protocol::WorkloadState::kFailed;
          break;
        case launch::CopyState::kStopped:
          s.state = protocol::WorkloadState::kStopped;
          break;
      }
      if (auto p = w->supervisor->process()) s.pid = p->pid;
      s.restarts = w->supervisor->restarts();
      s.exit_codes = w->supervisor->exit_codes();
    }
    if ((s.state == protocol::WorkloadState::kRunning ||
         s.state == protocol::WorkloadState::kStarting) &&
        s.pid != 0) {
      s.address = fmt::format("127.0.0.1:{}", w->port);
    }
    s.ever_healthy = w->ever_healthy;
    s.ports = w->ports;
    s.status_body = w->status_body;
    if (s.state == protocol::WorkloadState::kBackoff ||
        s.state == protocol::WorkloadState::kFailed) {
      if (w->log_tail_restarts != s.restarts) {
        w->log_tail = LogTail(w->log_dir);
        w->log_tail_restarts = s.restarts;
      }
      s.log_tail = w->log_tail;
    }
    if (w->ledger) {
      s.memory_used_mib = static_cast<int64_t>(w->ledger->Snapshot().used_bytes / kMiB);
      // The limiter charges busy time only while it limits (core < 100, not burstable); an
      // unlimited share stays "not measured" rather than a false 0.
      const interposer::LedgerSettings& limits = w->ledger->settings();
      if (!limits.burstable && limits.core_percent < 100) {
        if (!w->core_rate) w->core_rate.emplace(options_.core_sample_interval);
        s.core_used_percent = w->core_rate->Sample(
            w->ledger->bucket().busy_ns_total.load(std::memory_order_relaxed), clock_.Now());
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> WorkloadManager::TakeEvents() { return std::exchange(events_, {}); }

bool WorkloadManager::TakeChanged() { return std::exchange(changed_, false); }

}  // namespace carve::agent::node
