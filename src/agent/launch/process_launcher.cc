#include "agent/launch/process_launcher.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace carve::launch {
namespace {

struct ProcStat {
  char state = '?';
  int pgrp = 0;
  uint64_t start_time = 0;
};

// /proc/<pid>/stat: "pid (comm) state ppid pgrp ... starttime(22) ..."; comm may hold spaces
// and parentheses, so fields are counted from the last ')'.
std::optional<ProcStat> ReadStat(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> f;
  for (std::string tok; rest >> tok;) f.push_back(tok);
  if (f.size() < 20) return std::nullopt;
  ProcStat s;
  s.state = f[0][0];
  s.pgrp = std::stoi(f[2]);
  s.start_time = std::stoull(f[19]);
  return s;
}

// The variable that names a workload's leader in the environment of every process it starts.
constexpr std::string_view kLaunchIdVar = "CARVE_LAUNCH_ID=";
// Room for "<pid>-<start time>": two 20-digit numbers and the dash.
constexpr size_t kLaunchIdChars = 42;
// The status of a child whose launch was abandoned before exec (see ExecChild).
constexpr int kAbandonedExit = 126;

std::string LaunchIdOf(const ProcessId& p) {
  return std::to_string(p.pid) + "-" + std::to_string(p.start_time);
}

// True when /proc/<pid>/environ holds CARVE_LAUNCH_ID=<id>. Processes of other users cannot be
// read, and are never ours.
bool CarriesLaunchId(int pid, const std::string& id) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!in) return false;
  const std::string want = std::string(kLaunchIdVar) + id;
  for (std::string var; std::getline(in, var, '\0');) {
    if (var == want) return true;
  }
  return false;
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

Status OpenLog(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return Internal("cannot create log directory for " + path + ": " + ec.message());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Internal("cannot open log " + path + ": " + std::strerror(errno));
  ::close(fd);
  return OkStatus();
}

// Marks every descriptor above stderr close-on-exec, so a workload inherits nothing of the
// process that launched it: a server's listening socket or a client's connection held open by a
// copy would keep a port accepting after the server is gone. (err_fd is close-on-exec already.)
// Async-signal-safe: close_range(2) where the kernel has it, else fcntl on each descriptor.
void CloseInheritedOnExec() {
#ifdef SYS_close_range
  constexpr unsigned kCloexec = 1U << 2;  // CLOSE_RANGE_CLOEXEC, Linux 5.11.
  if (::syscall(SYS_close_range, 3U, ~0U, kCloexec) == 0) return;
#endif
  rlimit lim{};
  const long last = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 ? static_cast<long>(lim.rlim_cur) : 4096;
  for (int fd = 3; fd < last; ++fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

// Runs in the forked child: only async-signal-safe calls until exec. Reports errno on `err_fd`.
// The parent sends the launch id ("<pid>-<start time>", which only it can read from /proc once
// the child exists) and a newline on `id_fd`, after the request's `record` hook made the process
// durable; the id goes into `id_value`, the value part of the envp entry reserved for
// CARVE_LAUNCH_ID, which has room for kLaunchIdChars and a NUL. Without the newline (the parent
// refused the launch, or died first) the child exits without running anything.
[[noreturn]] void ExecChild(const LaunchRequest& r, char* const* argv, char* const* envp,
                            int err_fd, int id_fd, char* id_value) {
  auto fail = [err_fd] {
    const int e = errno;
    (void)!::write(err_fd, &e, sizeof e);
    ::_exit(127);
  };
  char line[kLaunchIdChars + 1];
  size_t got = 0;
  for (ssize_t n; got < sizeof line && (n = ::read(id_fd, line + got, sizeof line - got)) != 0;) {
    if (n < 0 && errno != EINTR) fail();
    if (n > 0) got += static_cast<size_t>(n);
  }
  if (got == 0 || line[got - 1] != '\n') ::_exit(kAbandonedExit);
  ::memcpy(id_value, line, got - 1);
  id_value[got - 1] = '\0';
  ::close(id_fd);
  if (::setsid() < 0) fail();
  const int out = ::open(r.stdout_path.c_str(), O_WRONLY | O_APPEND);
  const int err = ::open(r.stderr_path.c_str(), O_WRONLY | O_APPEND);
  const int null = ::open("/dev/null", O_RDONLY);
  if (out < 0 || err < 0 || null < 0) fail();
  if (::dup2(null, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) fail();
  if (!r.work_dir.empty() && ::chdir(r.work_dir.c_str()) < 0) fail();
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the agent may block signals; children must not
  ::signal(SIGPIPE, SIG_DFL);  // ... nor ignore them: carve ignores SIGPIPE (cli/main.cc)
  CloseInheritedOnExec();
  ::execvpe(argv[0], argv, envp);
  fail();
  ::_exit(127);  // not reached: fail() exits
}

}  // namespace

uint64_t ProcessStartTime(int pid) {
  auto s = ReadStat(pid);
  return s ? s->start_time : 0;
}

namespace {

// Pids of the live (non-zombie) processes in /proc for which keep(pid, stat) is true.
template <typename Keep>
std::vector<int> LiveProcesses(Keep keep) {
  std::vector<int> pids;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return pids;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    auto s = ReadStat(static_cast<int>(pid));
    if (s && s->state != 'Z' && s->state != 'X' && keep(static_cast<int>(pid), *s)) {
      pids.push_back(static_cast<int>(pid));
    }
  }
  ::closedir(dir);
  return pids;
}

}  // namespace

std::vector<int> LiveGroupMembers(int pgid) {
  return LiveProcesses([&](int, const ProcStat& s) { return s.pgrp == pgid; });
}

std::vector<int> LiveMembers(const ProcessId& leader) {
  const std::string id = LaunchIdOf(leader);
  // While the leader's pid still names it (alive or a zombie not yet reaped) the pid cannot have
  // been reused, so its process group is the workload's. Without it, only the launch id says a
  // process is ours.
  const auto leader_stat = ReadStat(leader.pid);
  const bool group_is_ours = leader_stat && leader_stat->start_time == leader.start_time;
  return LiveProcesses([&](int pid, const ProcStat& s) {
    // A process started before the leader cannot descend from it, whatever its environment.
    if (s.start_time < leader.start_time) return false;
    return (group_is_ours && s.pgrp == leader.pid) || CarriesLaunchId(pid, id);
  });
}

Result<ProcessId> ProcessLauncher::Start(const LaunchRequest& r) {
  if (r.argv.empty() || r.argv[0].empty()) return InvalidArgument("launch request has no argv");
  // exec takes "NAME=value" C strings: a name with '=' would set another variable (say
  // LD_PRELOAD=... past the one the binding sets), and a NUL would cut the entry short.
  for (const auto& [k, v] : r.env) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos ||
        v.find('\0') != std::string::npos) {
      return InvalidArgument("environment variable \"" + k.substr(0, k.find('\0')) +
                             "\": a name must be non-empty without '=' or NUL, a value "
                             "without NUL");
    }
  }
  for (const auto& a : r.argv) {
    if (a.find('\0') != std::string::npos) {
      return InvalidArgument("argument \"" + a.substr(0, a.find('\0')) + "\" holds a NUL byte");
    }
  }
  CARVE_RETURN_IF_ERROR(OpenLog(r.stdout_path));
  CARVE_RETURN_IF_ERROR(OpenLog(r.stderr_path));
  // Built before fork: the child may not allocate.
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : r.env) {
    if (k + "=" != kLaunchIdVar) env_strings.push_back(k + "=" + v);
  }
  env_strings.push_back(std::string(kLaunchIdVar) + std::string(kLaunchIdChars, '0'));
  std::vector<char*> argv, envp;
  for (const auto& a : r.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  char* const id_value = env_strings.back().data() + kLaunchIdVar.size();

  int err_pipe[2];
  int id_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) < 0) return Internal(std::string("pipe2: ") + strerror(errno));
  if (::pipe2(id_pipe, O_CLOEXEC) < 0) {
    const int e = errno;
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    return Internal(std::string("pipe2: ") + strerror(e));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {err_pipe[0], err_pipe[1], id_pipe[0], id_pipe[1]}) ::close(fd);
    return Internal(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::close(id_pipe[1]);
    ExecChild(r, argv.data(), envp.data(), err_pipe[1], id_pipe[0], id_value);
  }
  ::close(err_pipe[1]);
  ::close(id_pipe[0]);
  // The child waits for its launch id before it does anything else, so its start time is that
  // of the process that will exec.
  const ProcessId started{pid, ProcessStartTime(pid)};
  if (r.record) {
    if (Status s = r.record(started); !s) {
      // No id: the child exits without running the program.
      for (int fd : {id_pipe[1], err_pipe[0]}) ::close(fd);
      int status = 0;
      ::waitpid(pid, &status, 0);
      return s.error();
    }
  }
  const std::string id = LaunchIdOf(started) + "\n";
  (void)!::write(id_pipe[1], id.data(), id.size());
  ::close(id_pipe[1]);
  int child_errno = 0;
  const ssize_t n = ::read(err_pipe[0], &child_errno, sizeof child_errno);
  ::close(err_pipe[0]);
  if (n == sizeof child_errno) {  // exec failed; the pipe closed on success (CLOEXEC)
    int status = 0;
    ::waitpid(pid, &status, 0);
    return NotFound("cannot start \"" + r.argv[0] + "\": " + std::strerror(child_errno));
  }
  return started;
}

std::optional<int> ProcessLauncher::TryWait(const ProcessId& p) {
  int status = 0;
  const pid_t got = ::waitpid(p.pid, &status, WNOHANG);
  if (got == p.pid) return DecodeStatus(status);
  return std::nullopt;
}

bool ProcessLauncher::Alive(const ProcessId& p) {
  auto s = ReadStat(p.pid);
  return s && s->start_time == p.start_time && s->state != 'Z' && s->state != 'X';
}

Result<std::optional<int>> ProcessLauncher::Stop(const ProcessId& p,
                                                 std::chrono::milliseconds grace) {
  std::optional<int> exit_status;
  auto reap = [&] {
    if (!exit_status) exit_status = TryWait(p);
  };
  // Every member by pid (LiveMembers vouched for each), so a reused pid is never signalled.
  auto signal_all = [&](int sig, const std::vector<int>& members) {
    for (int pid : members) ::kill(pid, sig);
  };
  // Verify identity before signalling: a stale pid may name someone else's process now.
  std::vector<int> members = LiveMembers(p);
  if (!Alive(p) && members.empty()) {
    reap();
    return exit_status;
  }
  signal_all(SIGTERM, members);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    reap();
    if (LiveMembers(p).empty()) {
      reap();  // the leader may have become a zombie since the first reap
      return exit_status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto kill_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < kill_deadline) {
    reap();
    members = LiveMembers(p);
    if (members.empty()) {
      reap();  // the leader may have become a zombie since the first reap
      return exit_status;
    }
    // Again on every pass: a member may have forked since the last one.
    signal_all(SIGKILL, members);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return Internal("process group " + std::to_string(p.pid) + " survived SIGKILL for 10 s");
}

}  // namespace carve::launch
