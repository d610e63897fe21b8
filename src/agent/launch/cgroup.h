// Host CPU and memory limits for a workload through cgroups, v2 or v1, whichever the host has.
//   v2 (<root>/cgroup.controllers exists): <root>/<parent>/<workload>/ with cpu.max
//      ("<quota_us> 100000") and memory.max, after enabling +cpu +memory in the parents'
//      cgroup.subtree_control.
//   v1 (<root>/cpu and <root>/memory hierarchies): cpu.cfs_period_us / cpu.cfs_quota_us under
//      <root>/cpu/<parent>/<workload>/ and memory.limit_in_bytes under <root>/memory/...
// Where cgroups cannot be written (a container, no privilege), ApplyOrWarn logs one clear spdlog
// warning and the workload runs without host limits. Not thread-safe per workload.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace carve::launch {

enum class CgroupVersion { kNone, kV1, kV2 };

struct HostLimits {
  std::optional<int64_t> cpu_millicores;  // 1000 = one core
  std::optional<int64_t> memory_bytes;
};

class CgroupManager {
 public:
  explicit CgroupManager(std::string root = "/sys/fs/cgroup", std::string parent = "carve");

  CgroupVersion Detect() const;
  // Creates the workload's cgroup (on v1, one in each of cpu and memory), writes the limits that
  // are set (none: a cgroup of its own, unlimited) and moves `pid` into it. InvalidArgument
  // for a workload that is not a plain name or a non-positive limit; FailedPrecondition when no
  // cgroup hierarchy is found; Internal naming the file and errno's text when a write fails.
  Status Apply(const std::string& workload, int pid, const HostLimits& limits) const;
  // Apply, but a failure only logs a warning. True when the limits are in force.
  bool ApplyOrWarn(const std::string& workload, int pid, const HostLimits& limits) const;
  // The pids in the workload's cgroup (v2, or v1's memory hierarchy); none when it has no
  // cgroup. A process cannot leave its cgroup without privilege, so this finds what left the
  // process group and cleared its environment too.
  std::vector<int> Members(const std::string& workload) const;
  // Removes the workload's (empty) cgroup directories; missing ones are fine.
  Status Remove(const std::string& workload) const;

 private:
  const std::string root_;
  const std::string parent_;
};

}  // namespace carve::launch
