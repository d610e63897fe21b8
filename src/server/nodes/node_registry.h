// NodeRegistry: the control plane's side of the agent protocol (protocol/agent_protocol.h).
//
// It knows every node an agent ever registered (persisted in the Store as kind "Node" with
// account "", so a restarted server knows its fleet before the agents reconnect), whether each
// is Ready, the node's desired state, and what its agent last reported.
//
// Desired state has two parts, both set by the control plane:
//   - GPU layouts, one entry per GPU (SetGpuLayout), written by AgentNodeDriver when an endpoint
//     carves;
//   - workloads, grouped by source ("sagemaker" for inference-component copies, "queues" for
//     job tasks): SetWorkloads replaces one source's list for one node. The node's desired
//     workloads are the union over sources.
// Any change bumps the node's version and wakes its long-poll.
//
// Readiness: a node is Ready from its registration (or from recovery, see Recover) until no
// status report arrived for
// node_timeout (Sweep, called by the server's reconciler, marks it NotReady). A report from a
// NotReady node makes it Ready again. Listeners (AddListener) are told after any registration,
// readiness change, or status change worth reacting to (a workload's state, a GPU's carve).
//
// Scale (issue 14): a long-poll is a waiter, not a blocked thread (WatchDesired); a heartbeat is
// a few dozen bytes that only refreshes liveness, and the full status comes only when it
// changed; a workload's status is found by id in O(1); and controllers learn *what* changed
// since their last pass (Subscribe/TakeChanges) instead of re-reading every node.
//
// Thread-safe. Listeners are called without the registry's lock held, on the calling thread
// (an HTTP worker or the sweeper), so they may call back into the registry. A listener lives as
// long as the Subscription AddListener returns: once that is destroyed the listener is never
// called again, and a call already under way has returned.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/result.h"
#include "protocol/agent_protocol.h"
#include "store/store.h"

namespace carve::server::nodes {

struct NodeRegistryOptions {
  std::chrono::milliseconds heartbeat_interval{2000};
  std::chrono::milliseconds node_timeout{15000};
  std::chrono::milliseconds max_long_poll{30000};
  // After a server restart, how long a recovered node stays Ready without reporting (at least
  // node_timeout): time for its agent to notice the restart and reconnect.
  std::chrono::milliseconds recovery_grace{30000};
  const Clock* clock = nullptr;  // nullptr: SystemClock
};

struct NodeView {
  protocol::Registration registration;
  bool ready = false;
  bool connected = false;        // registered with this server process (since its start)
  int64_t last_report_ms = 0;    // Unix millis of the last status report; 0 never
  std::string not_ready_reason;  // "no status report for 15 s"; "" when ready
  uint64_t desired_version = 0;
  uint64_t applied_version = 0;
  protocol::StatusReport last_status;
};

// A node without its last status: what controllers consult every pass.
struct NodeBrief {
  NodeId id;
  std::string instance_type;
  bool ready = false;
  bool connected = false;
  std::string not_ready_reason;  // "" when ready
};

// What changed since a subscriber last asked. `everything` is set when too much changed to
// list (or the subscriber is new): the subscriber should then look at everything.
struct RegistryChanges {
  std::set<std::string> nodes;      // Registered, Ready, NotReady, or (re)connected.
  std::set<std::string> workloads;  // A workload's reported state, address or message changed.
  std::set<std::string> gpus;       // Nodes whose reported GPU carve changed.
  bool everything = false;
  bool empty() const { return nodes.empty() && workloads.empty() && gpus.empty() && !everything; }
};

class NodeRegistry {
 public:
  // `store` must outlive the registry.
  NodeRegistry(store::Store& store, NodeRegistryOptions options = {});
  // Pending long-polls are answered Unavailable ("the server is stopping").
  ~NodeRegistry();
  NodeRegistry(const NodeRegistry&) = delete;
  NodeRegistry& operator=(const NodeRegistry&) = delete;

  // Loads persisted nodes, not connected; each counts as Ready for max(node_timeout,
  // recovery_grace), the time its agent has to reconnect before its work is rescheduled. Call
  // once before serving.
  Status Recover();

  // ---- agent side (called by the /v1/agent routes) ----
  // Persists the inventory (an acknowledged registration survives a crash). InvalidArgument when
  // the instance type is not in the catalog or the GPU count does not match it.
  Result<protocol::RegisterReply> Register(const protocol::Registration& registration);
  // Records the report (the heartbeat). reregister is set when the node is unknown or the
  // report's epoch is not this server's.
  protocol::StatusReply ReportStatus(const protocol::StatusReport& report);
  // Long-poll without a thread: `done` gets the node's desired state once its version exceeds
  // `after` (or `epoch` differs from this server's), or when `wait` (capped at max_long_poll)
  // passes, with the state as it is then; NotFound at once for an unknown node. `done` runs on
  // this thread when the answer is ready now, else on the thread whose change made it ready or
  // on the registry's deadline thread, without the registry's lock; it must not block.
  using DesiredCallback = std::function<void(Result<protocol::DesiredState>)>;
  void WatchDesired(const std::string& node, const std::string& epoch, uint64_t after,
                    std::chrono::milliseconds wait, DesiredCallback done);
  // The same, blocking the caller (tests, tools).
  Result<protocol::DesiredState> WaitDesired(const std::string& node, const std::string& epoch,
                                             uint64_t after, std::chrono::milliseconds wait);
  // Liveness between full status reports. send_status is set when the registry does not have
  // the status version the agent last sent.
  protocol::HeartbeatReply Heartbeat(const protocol::Heartbeat& heartbeat);

  // ---- control-plane side ----
  void SetGpuLayout(const NodeId& node, const protocol::GpuDesired& gpu);
  // Several GPUs of one node in one desired-state change (one version, one agent wake-up).
  void SetGpuLayouts(const NodeId& node, const std::vector<protocol::GpuDesired>& gpus);
  void SetWorkloads(std::string_view source, const NodeId& node,
                    std::vector<protocol::WorkloadDesired> workloads);
  // Drops every workload of `source` on nodes not in `nodes` (a source's full resync).
  void RetainWorkloadNodes(std::string_view source, const std::vector<NodeId>& nodes);
  // The ended workloads of `source` on `node` whose logs the agent keeps (DesiredState's
  // kept_logs); the agent removes any other log that no desired workload owns.
  void SetKeptLogs(std::string_view source, const NodeId& node, std::vector<std::string> ids);

  // Blocks until the node reports `gpu` applied with exactly the desired partitions (OK), an
  // error for it (FailedPrecondition/Internal with the agent's message), the node going
  // NotReady (Unavailable), or `timeout` (Unavailable).
  Status WaitForGpu(const NodeId& node, int gpu, std::chrono::milliseconds timeout);

  // WaitForGpu for every GPU with a desired entry on each of `nodes`, with one waiter: after a
  // first look at each node it re-checks only the nodes whose status changed (TakeChanges), so
  // a carve of N nodes costs O(N) checks, not O(N) per report. OK when all are carved; the first
  // node's error otherwise; Unavailable at `timeout` (naming how many are still carving) or
  // when `abort` becomes true.
  Status WaitForNodes(const std::vector<NodeId>& nodes, std::chrono::milliseconds timeout,
                      const std::atomic<bool>* abort = nullptr);

  // The last reported status of a workload, wherever it runs. nullopt when no node reported it.
  std::optional<protocol::WorkloadStatus> Workload(std::string_view id) const;
  // The last reported GPU status; nullopt when unknown.
  std::optional<protocol::GpuStatus> Gpu(const NodeId& node, int gpu) const;
  std::optional<NodeView> Node(const NodeId& node) const;
  std::vector<NodeView> Nodes() const;
  bool IsReady(const NodeId& node) const;
  std::optional<NodeBrief> Brief(const NodeId& node) const;
  // Of `nodes`, those known and NotReady, with the reason, in one lock (DescribeEndpoint over
  // thousands of instances).
  std::vector<std::pair<std::string, std::string>> NotReadyAmong(
      const std::vector<std::string>& nodes) const;
  std::vector<NodeBrief> Briefs() const;

  // A controller's cursor on what changed: Subscribe once, then TakeChanges each pass. A new
  // subscriber's first changes say `everything`.
  int Subscribe();
  RegistryChanges TakeChanges(int subscriber);
  void Unsubscribe(int subscriber);

  // Marks nodes NotReady whose last report is older than node_timeout; returns those that
  // changed (the caller reschedules their work).
  std::vector<NodeId> Sweep();

  // mGPU memory accounting cross-check (HAMi's most reported bug is this gap): for each workload
  // whose agent reports a ledger figure (memory_used_mib >= 0), what NVML reports for its process
  // on the node's GPUs, and the difference. Workloads NVML does not list count as 0 MiB there.
  struct LedgerGap {
    std::string node;
    std::string workload;
    int64_t ledger_mib = 0;
    int64_t nvml_mib = 0;
    int64_t gap_mib = 0;  // nvml - ledger: > 0 is memory the quota does not see
  };
  std::vector<LedgerGap> LedgerGaps() const;

  // Calls `listener` after every change worth reacting to until the result is destroyed.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&&) noexcept = default;
    Subscription& operator=(Subscription&& other) noexcept;
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription() { Reset(); }

    // Detaches now; waits for a call of the listener under way on another thread.
    void Reset();

   private:
    friend class NodeRegistry;
    struct Listener {
      std::mutex mu;
      std::function<void()> call;  // guarded by mu; empty once detached
    };
    explicit Subscription(std::shared_ptr<Listener> l) : listener_(std::move(l)) {}
    std::shared_ptr<Listener> listener_;
  };
  [[nodiscard]] Subscription AddListener(std::function<void()> listener);

  const std::string& epoch() const { return epoch_; }
  const NodeRegistryOptions& options() const { return options_; }

  // GET /v1/nodes body.
  nlohmann::json ToJson() const;

 private:
  struct Entry {
    protocol::Registration registration;
    bool connected = false;
    bool ready = false;
    int64_t last_report_ms = 0;
    std::chrono::steady_clock::time_point last_report{};
    std::string not_ready_reason = "its agent has not connected since the server started";
    uint64_t version = 1;
    std::map<int, protocol::GpuDesired> gpus;
    std::map<std::string, std::vector<protocol::WorkloadDesired>, std::less<>> workloads;
    std::map<std::string, std::vector<std::string>, std::less<>> kept_logs;  // by source
    protocol::StatusReport status;
    std::vector<uint64_t> waiters;  // Long-polls waiting for a newer version.
  };
  struct Waiter {
    std::string node;
    uint64_t after = 0;
    DesiredCallback done;
  };
  using Fired = std::vector<std::pair<DesiredCallback, Result<protocol::DesiredState>>>;

  void NotifyListeners();
  protocol::DesiredState DesiredLocked(const Entry& e) const;
  // The node's version went up: its waiters whose `after` it now exceeds are collected.
  void BumpLocked(Entry& e, Fired& fired);
  static void Fire(Fired& fired);
  void DeadlineLoop();
  // Records a change for every subscriber.
  void NoteLocked(std::set<std::string> RegistryChanges::*what, const std::string& key);
  // One GPU's carve as the node last reported it: OK (carved as desired), an error (the report
  // for version `target` or later says it failed, or carved it otherwise), nullopt (carving).
  std::optional<Status> GpuOutcomeLocked(const std::string& node, const Entry& e, int gpu,
                                         const protocol::GpuDesired& want, uint64_t target) const;
  // The report with only the workloads this node may speak for: those placed on it, and those
  // it already reported (a copy being stopped after it left the desired state). Another node's
  // workload is never re-homed by a report (docs/security.md, "Nodes").
  protocol::StatusReport OwnWorkloadsLocked(const Entry& e, const protocol::StatusReport& reported);
  void IndexWorkloadsLocked(const std::string& node, const protocol::StatusReport& before,
                            const protocol::StatusReport& after);

  store::Store& store_;
  const NodeRegistryOptions options_;
  const Clock& clock_;
  const std::string epoch_;

  mutable std::mutex mu_;
  std::condition_variable changed_;                                 // any desired or status change
  std::map<std::string, Entry> nodes_;                              // guarded by mu_
  std::vector<std::shared_ptr<Subscription::Listener>> listeners_;  // guarded by mu_
  // Long-poll waiters by id, and their deadlines; guarded by mu_.
  std::unordered_map<uint64_t, Waiter> waiters_;
  std::multimap<std::chrono::steady_clock::time_point, uint64_t> deadlines_;
  uint64_t next_waiter_ = 0;
  bool stopping_ = false;
  std::condition_variable deadline_cv_;
  std::thread deadline_thread_;
  // Which node reported each workload id; guarded by mu_.
  std::unordered_map<std::string, std::string> workload_node_;
  std::map<int, RegistryChanges> subscribers_;  // guarded by mu_
  int next_subscriber_ = 0;                     // guarded by mu_
};

}  // namespace carve::server::nodes
