// Launcher: the role that starts a workload as an OS process, watches it and stops it. The real
// one is ProcessLauncher (process_launcher.h); Supervisor (supervisor.h) builds restarts on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace carve::launch {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// A process named by pid plus its start time (/proc/<pid>/stat field 22, clock ticks since
// boot), so a reused pid is never mistaken for the process.
struct ProcessId {
  int pid = 0;
  uint64_t start_time = 0;
  friend bool operator==(const ProcessId&, const ProcessId&) = default;
};

// Everything needed to exec one copy. argv[0] is looked up in PATH when it has no '/'.
struct LaunchRequest {
  std::vector<std::string> argv;
  EnvVars env;              // the complete environment of the child (nothing is inherited)
  std::string work_dir;     // empty: the launcher's own
  std::string stdout_path;  // appended to; created with its parent directories
  std::string stderr_path;
  // Called once the process exists and before it may run the program: the caller makes the
  // process durable (its pid file) here. An error stops the process before it ran anything and
  // fails Start with that error. A launcher that dies before this returns leaves a process that
  // exits without running the program, so a crash never leaves a copy nobody recorded.
  std::function<Status(const ProcessId&)> record{};
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  // Starts the process as the leader of a new session and process group (pgid == pid), so
  // Stop reaches everything it forks. InvalidArgument for an empty argv, an argument with a
  // NUL byte, or a variable whose name is empty or holds '=' or NUL; NotFound when the
  // program cannot be executed (the message has errno's text); Internal for fork/log failures.
  virtual Result<ProcessId> Start(const LaunchRequest& request) = 0;
  // The exit status once the process ended (0..255, or 128 + signal), else nullopt. Reaps it.
  virtual std::optional<int> TryWait(const ProcessId& process) = 0;
  // True while `process` (pid and start time) is alive and not a zombie. Works for processes
  // that are not our children (adopted after an agent restart).
  virtual bool Alive(const ProcessId& process) = 0;
  // SIGTERM to the whole group, then SIGKILL to whatever of the group is left after `grace`;
  // returns once no member is alive. Returns the leader's exit status when it was our child.
  virtual Result<std::optional<int>> Stop(const ProcessId& process,
                                          std::chrono::milliseconds grace) = 0;
};

}  // namespace carve::launch
