// ProcessLauncher: the Launcher over fork/exec, process groups and /proc (Linux only).
//
// Membership: every process a workload starts carries CARVE_LAUNCH_ID=<leader pid>-<leader start
// time> in its environment (set by Start, inherited by whatever it forks and execs). Stop reaches
// the leader's process group and every process with that id, so a descendant that left the
// group with setsid() is stopped too, as long as it kept its environment. Where the workload has
// a cgroup, that covers even one that did not (cgroup.h).
#pragma once

#include <vector>

#include "agent/launch/launcher.h"

namespace carve::launch {

class ProcessLauncher final : public Launcher {
 public:
  Result<ProcessId> Start(const LaunchRequest& request) override;
  std::optional<int> TryWait(const ProcessId& process) override;
  bool Alive(const ProcessId& process) override;
  Result<std::optional<int>> Stop(const ProcessId& process,
                                  std::chrono::milliseconds grace) override;
};

// Start time of `pid` from /proc/<pid>/stat, 0 when it does not exist.
uint64_t ProcessStartTime(int pid);
// Pids of the live (non-zombie) processes whose process group is `pgid`, from /proc.
std::vector<int> LiveGroupMembers(int pgid);
// Pids of the live processes of the workload `leader` started: its process group, and every
// process started after it that carries its CARVE_LAUNCH_ID.
std::vector<int> LiveMembers(const ProcessId& leader);

}  // namespace carve::launch
