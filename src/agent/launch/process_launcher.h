// ProcessLauncher: the Launcher over fork/exec, process groups and /proc (Linux only).
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

}  // namespace carve::launch
