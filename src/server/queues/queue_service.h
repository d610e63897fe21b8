// QueueService: mGPU queues and their jobs (issue 7). Queues own whole nodes claimed through
// NodeClaims (so a queue and an endpoint never share a node); jobs become tasks placed on the
// queue's cards (QueueCards) and run as processes through the node agents
// (NodeRegistry::SetWorkloads with source "queues").
//
// Lifecycle of a job: Submitted -> Pending (waiting for cards, FIFO per priority) -> Running (a
// task is placed) -> Succeeded | Failed | Cancelled. A job whose parameters break a share rule is
// accepted and goes to Failed with the rule's message.
// Waiting is strict FIFO within a queue: jobs are taken by priority (higher first), then by
// submission; the first job that cannot place all its pending tasks stops the pass, so a small
// later job never overtakes it. Gang jobs place all their tasks or none.
// A RayJob runs its head first; its workers and driver are published once the head reports an
// address, and the job ends with the driver (entrypoint). RayCluster/RayServe run until cancelled.
// A RayServe job then deploys its Serve config with the Serve command, beside the head, and reads
// the applications' status from the head's dashboard through the agent. When the head restarts
// (its process, or on another node after its node was lost) carve restarts the cluster: every
// other Ray process is replaced and the Serve config deployed again.
//
// Durability: queues and jobs (with every task's placement and stable workload id) are Store
// records; Recover() rebuilds the placement state from them and re-claims the queues' nodes, so a
// restarted server republishes the same workload ids and the agents keep the processes running.
//
// Errors: InvalidArgument (400) names field, value and rule; NotFound (404); AlreadyExists and
// FailedPrecondition (409); ResourceExhausted (409) when the fleet lacks free nodes.
// Thread-safe: one mutex guards all state; the reconciler runs on its own thread (Start) and is
// woken by NodeRegistry listeners and by every API change.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "protocol/agent_protocol.h"
#include "server/nodes/node_claims.h"
#include "server/nodes/node_registry.h"
#include "server/queues/gpu_view.h"
#include "server/queues/queue_cards.h"
#include "server/queues/queue_model.h"
#include "server/queues/queue_request.h"
#include "server/queues/ray_runtime.h"
#include "server/reconciler_loop.h"
#include "store/store.h"

namespace carve::server::queues {

struct QueueOptions {
  // Card memory no share may take (driver, context, enforcement overhead), per card.
  int64_t memory_reserve_mib = 512;
  Enforcement default_enforcement = Enforcement::kInterposer;
  // How Ray processes start (ray_runtime.h); the server's --config `ray:` section.
  RayRuntime ray;
  std::chrono::milliseconds reconcile_interval{500};
  const Clock* clock = nullptr;  // nullptr: SystemClock.
  // Input limits (docs/api.md): queues one account may hold, and jobs not yet finished that one
  // queue may hold. Past either, CreateQueue / SubmitJob are ResourceExhausted (409).
  int max_queues_per_account = 100;
  int max_unfinished_jobs_per_queue = 10'000;
  // Finished jobs one queue keeps; past it the reconciler deletes the oldest finished ones (by
  // submission), from the Store too. 0: keep none once finished.
  int max_finished_jobs_per_queue = 1'000;
};

inline constexpr std::string_view kWorkloadSource = "queues";

class QueueService {
 public:
  // All three must outlive the service. Registers a listener on `registry`. `claims` is shared
  // with the SageMaker service.
  QueueService(store::Store& store, nodes::NodeRegistry& registry, nodes::NodeClaims& claims,
               QueueOptions options = {});
  ~QueueService();  // Stops the reconciler.
  QueueService(const QueueService&) = delete;
  QueueService& operator=(const QueueService&) = delete;

  // Loads queues and jobs, re-claims nodes and restores placements. Call once, before Start.
  // A queue whose nodes cannot be re-claimed is loaded without cards and logged.
  Status Recover();
  void Start();  // Background reconciler.
  void Stop();   // Idempotent.
  // One reconcile pass: agent reports -> task and job states -> placement -> Store -> agents.
  void ReconcileOnce();

  Result<QueueRecord> CreateQueue(const std::string& account, const CreateQueueRequest& request);
  Result<QueueRecord> UpdateQueue(const std::string& account, const std::string& name,
                                  const nlohmann::json& body);
  Result<QueueRecord> GetQueue(const std::string& account, const std::string& name) const;
  std::vector<QueueRecord> ListQueues(const std::string& account) const;
  // FailedPrecondition while a job is not finished; releases the nodes and drops the jobs.
  Status DeleteQueue(const std::string& account, const std::string& name);

  Result<JobRecord> SubmitJob(const std::string& account, const std::string& queue,
                              const JobSubmission& job);
  Result<JobRecord> GetJob(const std::string& account, const std::string& queue,
                           const std::string& id) const;
  Result<std::vector<JobRecord>> ListJobs(const std::string& account,
                                          const std::string& queue) const;
  // One page of a queue's jobs in submission order: those submitted after job number
  // `after_seq` (0: from the first), at most `limit`. `next_after` is set when more follow.
  struct JobPage {
    std::vector<JobRecord> jobs;
    std::optional<int64_t> next_after;
  };
  Result<JobPage> ListJobsPage(const std::string& account, const std::string& queue,
                               int64_t after_seq, int limit) const;
  // Cancels a job that has not finished (FailedPrecondition otherwise): its processes stop.
  Result<JobRecord> CancelJob(const std::string& account, const std::string& queue,
                              const std::string& id);

  // Queue monitoring: allocated and measured use per card and per worker.
  Result<QueueGpuView> GpuView(const std::string& account, const std::string& queue) const;
  std::vector<QueueGpuView> AllGpuViews() const;
  // GET /v1/fragmentation's part: for every queue of the account, the metric of each distinct
  // share its unfinished jobs' tasks ask for.
  std::vector<nodes::ShapeFragmentation> Fragmentation(const std::string& account) const;
  // Jobs per (account, queue, state), for metrics.
  std::map<std::tuple<std::string, std::string, std::string>, int> JobCounts() const;

  const QueueOptions& options() const { return options_; }
  // Asks the reconciler for a pass soon (registry listener, API changes).
  void Wake();
  // Passes the background reconciler has finished since Start.
  uint64_t passes() const { return loop_.passes(); }

 private:
  struct QueueState {
    QueueRecord record;
    int64_t version = 0;                    // Store version of the queue record.
    std::unique_ptr<QueueCards> cards;      // Null when the nodes could not be re-claimed.
    std::map<std::string, JobRecord> jobs;  // By id.
    std::map<std::string, int64_t> job_versions;
  };
  using QueueKey = std::pair<std::string, std::string>;  // (account, name)

  Result<QueueState*> Find(const std::string& account, const std::string& name);
  Result<const QueueState*> Find(const std::string& account, const std::string& name) const;
  Result<std::unique_ptr<QueueCards>> CardsFor(const QueueRecord& q) const;
  Status PersistJob(QueueState& q, const JobRecord& job);
  // Reconcile steps (mu_ held).
  // Sends the job's tasks on nodes that stopped reporting back to Pending; true when any moved.
  static bool RescheduleLost(QueueState& q, JobRecord& job);
  // Sends every Ray process but the head back to Pending (a new attempt), with `why`.
  static void RestartCluster(QueueState& q, JobRecord& job, const std::string& why);
  bool ObserveAgent(QueueState& q, JobRecord& job);
  // A RayServe job's Serve status from its serve task and the head's report (`head`).
  static bool ObserveServe(JobRecord& job, const std::optional<protocol::WorkloadStatus>& head);
  bool AdvanceJob(QueueState& q, JobRecord& job);
  void Schedule(QueueState& q, std::vector<std::string>& changed);
  // Deletes the oldest finished jobs past max_finished_jobs_per_queue (one Store commit).
  void PruneFinished(QueueState& q);
  // The applier of the tasks' plans (task_workload.h): each node's workloads to the registry,
  // only where they changed.
  void Publish();
  // Whether the agent has read the job's Ray head's Serve API once (its dashboard is up).
  bool HeadDashboardAnswered(const JobRecord& job) const;
  QueueGpuView ViewLocked(const QueueState& q) const;
  std::vector<QueueNode> NodesOf(const QueueRecord& q) const;

  store::Store& store_;
  nodes::NodeRegistry& registry_;
  nodes::NodeClaims& claims_;
  const QueueOptions options_;
  const Clock& clock_;

  mutable std::mutex mu_;
  std::map<QueueKey, QueueState> queues_;                                    // guarded by mu_
  std::map<std::string, std::vector<protocol::WorkloadDesired>> published_;  // guarded by mu_
  // Per node, the ended tasks of stored jobs whose logs the agent keeps.      // guarded by mu_
  std::map<std::string, std::vector<std::string>> published_kept_;

  ReconcilerLoop loop_;
  nodes::NodeRegistry::Subscription wake_;  // Last: detached first.
};

}  // namespace carve::server::queues
