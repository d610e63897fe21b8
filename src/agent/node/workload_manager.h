// WorkloadManager: runs the node's desired workloads as supervised OS processes.
//
// Reconcile(desired) stops workloads that are no longer desired (SIGTERM, SIGKILL after the
// grace period) and starts the missing ones: a free port, the device binding (MIG partition,
// whole GPUs, mGPU share through the interposer or MPS), cgroup host limits, logs under
// <data_dir>/logs/<LogDirName(id)>/ (workload_logs.h), and a pid file under <data_dir>/workloads/<dir>/ so a
// restarted agent adopts what still runs. The first Reconcile reads those pid files: a live
// process that is still desired (same id) is adopted, one that is not is killed. Nothing acts
// on pid files before that first desired state. A copy bound to a partition is adopted once the
// partition can be bound again (after the GPU applier's first pass); until then its process is
// kept, never started a second time, and stopped by StopAll or when it stops being desired.
//
// Poll() drives the supervisors (restart with backoff, exit codes), re-tries starts that wait
// for their partition to be carved, keeps each log within log_max_bytes, and probes health: a
// health-checked workload is "starting" until GET /ping answers 200, then "running"; it is probed
// every probe_interval and goes back to "starting" after `unhealthy_after` failed probes in a row.
//
// Processes run in their own session: destroying the manager (or the agent crashing) leaves
// them running. StopAll() stops them. Not thread-safe: the agent's apply loop owns it.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agent/launch/cgroup.h"
#include "agent/launch/launcher.h"
#include "agent/launch/pid_file.h"
#include "agent/launch/supervisor.h"
#include "agent/mps/mps_control.h"
#include "agent/node/busy_rate.h"
#include "agent/node/gpu_applier.h"
#include "agent/node/workload_command.h"
#include "agent/node/workload_sandbox.h"
#include "common/clock.h"
#include "interposer/ledger.h"
#include "protocol/agent_protocol.h"

namespace carve::agent::node {

struct WorkloadOptions {
  CommandContext command;       // node id, data dir, {carve}, PATH for podman/docker
  // libcarve-mgpu.so. An interposer share fails to start, naming why, when it is "" or cannot be
  // read: shares run unenforced only where their queue's enforcement is "none".
  std::string interposer_path;
  std::string mps_control_path = mps::kDefaultMpsControlPath;
  std::string cgroup_root = "/sys/fs/cgroup";
  std::chrono::milliseconds stop_grace{10'000};
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{60'000};
  std::chrono::milliseconds probe_interval{2000};
  // Shortest interval over which an interposer share's achieved core percent is computed.
  std::chrono::milliseconds core_sample_interval{1000};
  int unhealthy_after = 3;
  // Each stdout/stderr log is capped at this (launch::CapLog), checked on every Poll(); 0: no cap.
  uint64_t log_max_bytes = uint64_t{16} << 20;
  // An mGPU share whose processes hold more device memory than its quota plus this, as NVML
  // counts it, is stopped (share_guard.h). It covers the CUDA context, which NVML counts and
  // the interposer does not: carve's ledger-gap metric shows what that is on a node's cards.
  int64_t share_memory_slack_mib = 1024;
  // Wraps each tenant process launch (workload_sandbox.h); null: processes run as the agent.
  std::shared_ptr<WorkloadSandbox> sandbox;
};

class WorkloadManager {
 public:
  WorkloadManager(WorkloadOptions options, launch::Launcher& launcher, const Clock& clock,
                  const GpuApplier& gpus);
  // Leaves every process running (see StopAll).
  ~WorkloadManager();
  WorkloadManager(const WorkloadManager&) = delete;
  WorkloadManager& operator=(const WorkloadManager&) = delete;

  // Stops what is no longer desired (and, the first time, adopts or kills what pid files name).
  // A stopped copy's log directory is removed; a task's is kept (its job's logs route reads it)
  // until the server no longer lists it (RemoveUnlistedLogs).
  // Call before carving so that freed GPUs count as idle.
  void StopUndesired(const std::vector<protocol::WorkloadDesired>& desired);
  // Starts desired workloads that have no process yet, each new id with an empty log directory.
  // Call after carving.
  void StartMissing(const std::vector<protocol::WorkloadDesired>& desired);
  // Reports each workload of the desired state this agent could not read as failed, with the
  // reason, stopping a process it ran under an earlier, readable entry. Call after
  // StopUndesired, given the same workloads: an unreadable one is still desired, so its id
  // belongs in the list StopUndesired keeps (Placeholders).
  void RefuseUnreadable(const std::vector<protocol::UnreadableWorkload>& unreadable);
  // Entries that keep unreadable workloads' ids desired, to add to StopUndesired's list.
  static std::vector<protocol::WorkloadDesired> Placeholders(
      const std::vector<protocol::UnreadableWorkload>& unreadable);
  // Removes every log directory under the data dir whose workload is not running here, not in
  // `desired` and not in `kept` (the ended workloads the server still lists: tasks of jobs that
  // exist). So a deleted job's or queue's task logs go with it. Returns how many it removed.
  int RemoveUnlistedLogs(const std::vector<protocol::WorkloadDesired>& desired,
                         const std::vector<std::string>& kept);
  void Poll();

  // Stops, as failed, every mGPU share whose processes hold more device memory than its quota
  // plus options.share_memory_slack_mib, as `gpus` (NVML's per-process lists) say, and every
  // interposer share whose ledger no longer holds the limits this agent wrote into it; an event
  // says which and why. GPUs without process lists hold nothing against anyone.
  void HoldShareQuotas(const std::vector<protocol::GpuStatus>& gpus);

  // Our workloads per GPU index (by id), for the carver's "never re-carve busy GPUs" rule.
  std::map<int, std::vector<std::string>> BusyGpus() const;
  std::vector<protocol::WorkloadStatus> Statuses();
  // Events since the last call ("copy ic/0 exited with status 3, restarting in 1000 ms").
  std::vector<std::string> TakeEvents();
  // True when something a report shows changed since the last call.
  bool TakeChanged();
  // Stops every workload and the MPS daemons this manager started; removes their pid files.
  void StopAll();

 private:
  struct Workload;

  void AdoptFromPidFiles(const std::vector<protocol::WorkloadDesired>& desired);
  // Starts w's process, or adopts w.adopting's when that is still alive.
  void Start(Workload& w);
  // Stops the process of an earlier agent that w was to adopt, if any, and forgets it.
  void StopAdopting(Workload& w);
  Result<launch::DeviceBinding> Bind(Workload& w);
  Result<launch::DeviceBinding> BindShare(Workload& w, int gpu, const protocol::ShareSpec& share);
  void Stop(Workload& w);
  void RemoveContainer(const Workload& w);
  void PollOne(Workload& w);
  // Moves `pid` into w's own cgroup, with w's host limits where it has them.
  void PlaceInCgroup(Workload& w, int pid);
  void Probe(Workload& w);
  void AddEvent(std::string event);
  std::string DirOf(const std::string& id) const;

  const WorkloadOptions options_;
  launch::Launcher& launcher_;
  const Clock& clock_;
  const GpuApplier& gpus_;
  launch::CgroupManager cgroups_;
  mps::MpsControl mps_;
  std::set<int> mps_cards_;  // GPUs whose MPS daemon we started
  bool reconciled_ = false;  // pid files read (first desired state seen)
  std::map<std::string, std::unique_ptr<Workload>> workloads_;  // by id
  std::vector<std::string> events_;
  bool changed_ = false;
};

}  // namespace carve::agent::node
