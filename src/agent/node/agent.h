// Agent: the node agent (`carve agent`, or embedded by `carve server` once per simulated node).
//
// Create() picks the GPU driver (NVML when libnvidia-ml.so.1 loads and sees a GPU, else the
// simulated FakeNvml), discovers the node, derives the instance type when none is given and
// builds the Registration. Start() runs three threads:
//   watcher   registers (the only thread that does), then long-polls the desired state
//             (ControlPlane::WatchDesired);
//   loop      every loop_interval applies the latest desired state (stop what is no longer
//             desired, carve GPUs, start what is missing), supervises and probes workloads,
//             and snapshots the status;
//   reporter  sends the status every heartbeat interval, and at once after a change.
// Protocol resilience: an unreachable server (Unavailable) is retried with exponential backoff
// and jitter (retry_initial .. retry_max); the agent registers again when a reply says
// reregister, a call answers NotFound, or the desired state carries another epoch. Workloads
// keep running throughout; only the desired state stops them.
//
// Stop() ends the threads and leaves workloads running (a restarted agent adopts them through
// their pid files); StopWorkloads() also stops every workload. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/launch/launcher.h"
#include "agent/launch/process_launcher.h"
#include "agent/node/control_plane.h"
#include "agent/node/fence.h"
#include "agent/node/gpu_applier.h"
#include "agent/node/workload_manager.h"
#include "agent/nvml/nvml.h"
#include "common/clock.h"
#include "protocol/agent_protocol.h"

namespace carve::agent::node {

struct AgentOptions {
  std::string node_id;        // required
  std::string instance_type;  // "": derived from the GPUs
  std::string driver;         // "nvml", "sim", or "" (NVML when it sees a GPU, else sim)
  // FakeNodeConfig text for the sim driver; "" with an instance type: "gpus: N x <model>".
  std::string sim_config;
  std::string nvml_library = "libnvidia-ml.so.1";
  Nvml* nvml = nullptr;         // injected (tests): used instead of any driver; not owned
  std::string data_dir;         // required; made absolute
  std::string carve_binary;     // {carve} in command templates
  std::string interposer_path;  // libcarve-mgpu.so; "" or unreadable: interposer shares fail
  std::string mps_control_path = "/usr/bin/nvidia-cuda-mps-control";
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string search_path;  // PATH searched for podman/docker; "": the agent's $PATH
  // Where podman or docker find the NVIDIA Container Toolkit's CDI specs; empty: /etc/cdi and
  // /var/run/cdi, the toolkit's and podman's defaults.
  std::vector<std::string> cdi_spec_dirs;

  std::chrono::milliseconds heartbeat_interval{0};  // 0: what the server's RegisterReply says
  // Telemetry alone (utilization, memory per process) goes in a full status at most this
  // often; a changed outcome (a workload's state, a GPU's carve) goes at once.
  std::chrono::milliseconds telemetry_interval{10'000};
  std::chrono::milliseconds watch_wait{5000};       // long-poll hold (bounds Stop()'s latency)
  std::chrono::milliseconds loop_interval{200};
  std::chrono::milliseconds retry_initial{500};
  std::chrono::milliseconds retry_max{10'000};
  std::chrono::milliseconds restart_initial_backoff{1000};
  std::chrono::milliseconds restart_max_backoff{60'000};
  std::chrono::milliseconds stop_grace{10'000};
  std::chrono::milliseconds probe_interval{2000};
  std::chrono::milliseconds gpu_retry_after{std::chrono::minutes(5)};
  std::chrono::milliseconds sim_carve_time{0};  // sim driver: time each GPU's carve takes
  uint64_t log_max_bytes = uint64_t{16} << 20;  // per stream and copy (launch::CapLog)
  // What an mGPU share may hold past its memory quota before it is stopped (share_guard.h).
  int64_t share_memory_slack_mib = 1024;
  // Start the fence watchdog (fence.h; needs carve_binary) and beat its heartbeat this often.
  bool fence = false;
  // Who tenant processes run as and what they see (workload_sandbox.h, docs/security.md).
  SandboxOptions sandbox;
  std::chrono::milliseconds fence_beat{100};
  const Clock* clock = nullptr;          // nullptr: SystemClock
  launch::Launcher* launcher = nullptr;  // nullptr: ProcessLauncher
};

class Agent {
 public:
  // InvalidArgument for missing options or an instance type that cannot be derived (naming the
  // GPUs); NotFound when --driver nvml finds no library; Unavailable when it sees no GPU.
  static Result<std::unique_ptr<Agent>> Create(AgentOptions options, ControlPlane& control);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  void Start();
  // Ends the threads; workloads keep running. Idempotent.
  void Stop();
  // Stop(), then stops every workload (SIGTERM, SIGKILL after stop_grace) and MPS daemons.
  void StopWorkloads();

  const protocol::Registration& registration() const { return registration_; }
  // The status as the loop last built it (without node id/epoch/events).
  protocol::StatusReport CurrentStatus() const;
  // The epoch the agent is registered with; "" while unregistered.
  std::string epoch() const;
  // Passes of the apply loop so far (a test waits for passes instead of sleeping).
  uint64_t apply_passes() const { return apply_passes_; }

 private:
  Agent(AgentOptions options, ControlPlane& control);
  Status Init();
  Status ChooseDriver();
  bool RegisterOnce();
  void WatchLoop();
  void ApplyLoop();
  void ReportLoop();
  void BeatLoop();
  void ApplyOnce();
  Status StartFence();
  void StopFence();
  // Waits `d` or until Stop(); false when stopping.
  bool SleepFor(std::chrono::milliseconds d);
  std::chrono::milliseconds Heartbeat() const;

  AgentOptions options_;
  ControlPlane& control_;
  const Clock& clock_;
  std::unique_ptr<Nvml> owned_nvml_;
  Nvml* nvml_ = nullptr;
  std::string driver_;
  std::unique_ptr<launch::Launcher> owned_launcher_;
  std::unique_ptr<GpuApplier> gpus_;            // loop thread only (after Init)
  std::unique_ptr<WorkloadManager> workloads_;  // loop thread only (after Init)
  protocol::Registration registration_;         // immutable after Init

  std::atomic<bool> need_register_{true};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> apply_passes_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;                        // wakes sleepers on stop / change
  std::string epoch_;                                 // guarded by mu_
  std::chrono::milliseconds server_heartbeat_{2000};  // guarded by mu_
  std::optional<protocol::DesiredState> desired_;  // guarded by mu_
  bool desired_new_ = false;                       // guarded by mu_: loop should apply now
  protocol::StatusReport status_;                  // guarded by mu_
  // The status the server has not seen yet carries a newer version than the last one sent.
  uint64_t status_version_ = 1;                    // guarded by mu_
  uint64_t sent_version_ = 0;                      // guarded by mu_
  bool telemetry_dirty_ = false;                   // guarded by mu_
  bool server_wants_status_ = true;                // guarded by mu_
  std::chrono::steady_clock::time_point last_full_status_{};  // guarded by mu_
  std::vector<std::string> pending_events_;        // guarded by mu_
  bool report_now_ = false;                        // guarded by mu_

  std::unique_ptr<FenceBeat> fence_;           // set by Start() when options_.fence
  std::optional<launch::ProcessId> watchdog_;  // the `carve agent-fence` process
  launch::ProcessLauncher watchdog_launcher_;
  int64_t fenced_seen_ = 0;  // loop thread only

  std::chrono::steady_clock::time_point last_metrics_{};  // loop thread only
  std::vector<std::thread> threads_;
  bool started_ = false;
};

}  // namespace carve::agent::node
