// WorkloadManager's own: the state it keeps per workload, shared by the files that implement it
// (workload_manager.cc: the lifecycle; workload_devices.cc: binding devices and holding shares
// to their quotas). Not for other users.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agent/launch/pid_file.h"
#include "agent/launch/supervisor.h"
#include "agent/node/workload_manager.h"
#include "interposer/ledger.h"
#include "protocol/agent_protocol.h"

namespace carve::agent::node {

inline constexpr int64_t kMiB = 1024 * 1024;

struct WorkloadManager::Workload {
  protocol::WorkloadDesired desired;
  std::string dir;  // <data_dir>/workloads/<WorkloadDirName(id)>
  int port = 0;
  std::unique_ptr<launch::Supervisor> supervisor;  // null until started
  std::string failed;   // could not start; terminal until the desired entry changes
  std::string waiting;  // start deferred (its partition is not carved yet)
  std::string message;  // last event about it
  std::string log_dir;
  bool healthy = false;
  bool ever_healthy = false;
  int probe_failures = 0;
  // The log tail reported while it cannot start, read again only after another exit.
  std::string log_tail;
  int log_tail_restarts = -1;
  std::chrono::steady_clock::time_point next_probe{};
  std::optional<launch::ProcessId> process;  // as last written to the pid file
  int cgroup_pid = 0;                        // the process last placed in its cgroup
  // A live process of an earlier agent (its pid file) that this workload adopts as soon as it
  // can be bound: a copy's partition is bound only once the GPU applier has applied the desired
  // layout, which comes after the first adoption pass. Until then it is neither started again
  // nor forgotten: a start that ignored it would run the copy twice, the orphan on the same
  // partition, outliving every later stop.
  std::optional<launch::PidRecord> adopting;
  std::unique_ptr<interposer::Ledger> ledger;  // interposer shares
  std::optional<BusyRate> core_rate;           // interposer shares with a compute limit
  std::map<std::string, int> ports;            // desired.ports, as picked
  std::string status_url;                      // desired.status_url, expanded
  std::string status_body;
  std::chrono::steady_clock::time_point next_status_read{};
};

// "name/index": how events and logs name a workload to people.
inline std::string Label(const protocol::WorkloadDesired& d) {
  return fmt::format("{}/{}", d.name, d.index);
}

}  // namespace carve::agent::node
