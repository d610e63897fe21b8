// QueueService: the reconcile half. One pass reads what the agents report, moves tasks and jobs
// through their states, places waiting tasks (strict FIFO per priority), writes changed jobs to
// the Store, and only then publishes the desired processes to the agents, so that a process never
// runs under a placement the Store does not hold.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "server/queues/queue_service.h"
#include "server/queues/serve_config.h"
#include "server/queues/task_workload.h"

namespace carve::server::queues {
namespace {

// Maps an agent state onto the task; returns true when something a user sees changed.
bool ApplyStatus(TaskRecord& t, const protocol::WorkloadStatus& st) {
  using protocol::WorkloadState;
  TaskState next = TaskState::kRunning;  // Starting, running or in restart backoff.
  if (st.state == WorkloadState::kSucceeded) {
    next = TaskState::kSucceeded;
  } else if (st.state == WorkloadState::kFailed || st.state == WorkloadState::kStopped) {
    next = TaskState::kFailed;  // Stopped without our asking: the agent gave up on it.
  }
  const std::string agent_state(NameOf(st.state));
  std::string address = st.address;
  if (address.empty() && st.port > 0) address = fmt::format("127.0.0.1:{}", st.port);
  bool changed = next != t.state || t.agent_state != agent_state || t.exit_codes != st.exit_codes ||
                 t.restarts != st.restarts || t.message != st.message || t.log_dir != st.log_dir ||
                 t.address != address;
  t.state = next;
  t.agent_state = agent_state;
  t.exit_codes = st.exit_codes;
  t.restarts = st.restarts;
  t.message = st.message;
  t.log_dir = st.log_dir;
  t.address = address;
  return changed;
}

// Whether the agent's last read of a RayServe head's status_url got an answer.
bool DashboardAnswered(const std::optional<protocol::WorkloadStatus>& head) {
  return head && !head->status_body.empty() && !head->status_body.starts_with("error: ");
}

std::string FailureOf(const TaskRecord& t, int max_retries) {
  std::string codes =
      t.exit_codes.empty() ? "none" : fmt::format("{}", fmt::join(t.exit_codes, ","));
  return fmt::format("task {} ({}) failed: exit codes [{}], {} restart{} of {} allowed{}{}",
                     t.index, NameOf(t.role), codes, t.restarts, t.restarts == 1 ? "" : "s",
                     max_retries < 0 ? std::string("unlimited") : std::to_string(max_retries),
                     t.message.empty() ? "" : ": ", t.message);
}

// Back to Pending: its card is freed and the next placement is a new attempt (a new workload id),
// so the agent stops the old process.
void Requeue(QueueCards& cards, const JobRecord& job, TaskRecord& t, std::string why) {
  t.rescheduled = std::move(why);
  spdlog::warn("queues: job {} task {} ({}): {}", job.id, t.index, NameOf(t.role), t.rescheduled);
  if (t.allocation) cards.Release(t.allocation->id);
  t.allocation.reset();
  t.state = TaskState::kPending;
  t.node.clear();
  t.gpus.clear();
  t.agent_state.clear();
  t.message.clear();
  t.address.clear();
  t.ports.clear();
}

}  // namespace

// A task whose node stopped reporting (NotReady in the registry) goes back to Pending and is
// placed again, on another node when one has room (node loss is not a task failure and does not
// count against max_retries). If the node comes back, its agent stops the old process, because
// the task is no longer in the node's desired state. A lost Ray head takes its cluster with it:
// the workers and the driver were attached to that head.
bool QueueService::RescheduleLost(QueueState& q, JobRecord& job) {
  if (!q.cards) return false;
  auto active = [](const TaskRecord& t) {
    return t.state == TaskState::kPlaced || t.state == TaskState::kRunning;
  };
  auto lost = [&](const TaskRecord& t) {
    return active(t) && !t.node.empty() && !q.cards->NodeReady(t.node);
  };
  std::string head_node;
  for (const auto& t : job.tasks) {
    if (t.role == TaskRole::kHead && lost(t)) head_node = t.node;
  }
  bool changed = false;
  for (auto& t : job.tasks) {
    if (!lost(t)) continue;
    Requeue(*q.cards, job, t, fmt::format("node {} stopped reporting; rescheduled", t.node));
    changed = true;
  }
  if (!head_node.empty() && job.type != JobType::kCustomJob) {
    RestartCluster(q, job,
                   fmt::format("its Ray head's node {} stopped reporting; rescheduled", head_node));
    changed = true;
  }
  return changed;
}

void QueueService::RestartCluster(QueueState& q, JobRecord& job, const std::string& why) {
  if (!q.cards) return;
  for (auto& t : job.tasks) {
    if (t.role == TaskRole::kHead) continue;
    // A deployed Serve config (a finished serve task) is deployed again on the new cluster.
    const bool redeploy = t.role == TaskRole::kServe && t.state == TaskState::kSucceeded;
    if (t.state == TaskState::kPlaced || t.state == TaskState::kRunning || redeploy) {
      Requeue(*q.cards, job, t, why);
    }
  }
  job.head_address.clear();
  job.dashboard_url.clear();
  if (job.type == JobType::kRayServe) job.serve = {"WAITING_FOR_CLUSTER", why, "", {}};
}

bool QueueService::ObserveAgent(QueueState& q, JobRecord& job) {
  bool changed = false;
  std::optional<protocol::WorkloadStatus> head_status;
  for (auto& t : job.tasks) {
    if (t.state != TaskState::kPlaced && t.state != TaskState::kRunning) continue;
    auto st = registry_.Workload(t.workload_id);
    if (!st) continue;
    const int restarts_before = t.restarts;
    changed = ApplyStatus(t, *st) || changed;
    if (t.role != TaskRole::kHead) continue;
    head_status = st;
    if (t.ports != st->ports) {
      t.ports = st->ports;
      changed = true;
    }
    // The agent restarted the head's process: the workers lost their cluster's state with it.
    if (st->restarts > restarts_before && !job.head_address.empty()) {
      RestartCluster(q, job,
                     fmt::format("its Ray head restarted ({} restart{}); rejoining", st->restarts,
                                 st->restarts == 1 ? "" : "s"));
      changed = true;
    }
    if (job.head_address.empty() && !t.address.empty() && t.state == TaskState::kRunning &&
        st->state == protocol::WorkloadState::kRunning) {
      job.head_address = t.address;
      const std::string host = t.address.substr(0, t.address.rfind(':'));
      if (auto it = t.ports.find("dashboard"); it != t.ports.end()) {
        job.dashboard_url = fmt::format("http://{}:{}", host, it->second);
      }
      changed = true;
    }
  }
  if (job.type == JobType::kRayServe) changed = ObserveServe(job, head_status) || changed;
  return changed;
}

bool QueueService::ObserveServe(JobRecord& job,
                                const std::optional<protocol::WorkloadStatus>& head) {
  ServeStatus next = job.serve;
  const TaskRecord* serve = nullptr;
  for (const auto& t : job.tasks) {
    if (t.role == TaskRole::kServe) serve = &t;
  }
  if (job.head_address.empty() || serve == nullptr) {
    if (next.status.empty()) next.status = "WAITING_FOR_CLUSTER";
  } else if (serve->state == TaskState::kPending ||
             (serve->state == TaskState::kPlaced && !DashboardAnswered(head))) {
    const std::string why = head && head->status_body.starts_with("error: ")
                                ? " (" + head->status_body.substr(7) + ")"
                                : "";
    next = {"DEPLOYING", "waiting for the head's dashboard to answer" + why, "", {}};
  } else if (serve->state != TaskState::kSucceeded) {
    next = {"DEPLOYING",
            serve->message.empty() ? "the Serve config is being deployed" : serve->message,
            "",
            {}};
  } else if (head && !head->status_body.empty()) {
    next = ServeStatusFromBody(head->status_body);
  } else {
    next = {"DEPLOYING", "deployed; waiting for the head's Serve API to answer", "", {}};
  }
  if (!job.head_address.empty()) {
    for (const auto& t : job.tasks) {
      auto it = t.ports.find("serve");
      if (t.role == TaskRole::kHead && it != t.ports.end()) {
        next.ingress = fmt::format(
            "http://{}:{}", job.head_address.substr(0, job.head_address.rfind(':')), it->second);
      }
    }
  }
  if (next == job.serve) return false;
  job.serve = std::move(next);
  return true;
}

bool QueueService::AdvanceJob(QueueState& q, JobRecord& job) {
  if (IsTerminal(job.state)) return false;
  const JobState before = job.state;
  const TaskRecord* failed = nullptr;
  bool all_succeeded = !job.tasks.empty();
  bool driver_succeeded = false;
  bool any_placed = false;
  for (const auto& t : job.tasks) {
    if (t.state == TaskState::kFailed && failed == nullptr) failed = &t;
    all_succeeded = all_succeeded && t.state == TaskState::kSucceeded;
    driver_succeeded =
        driver_succeeded || (t.role == TaskRole::kDriver && t.state == TaskState::kSucceeded);
    any_placed = any_placed || t.state != TaskState::kPending;
  }
  const bool ray = job.type != JobType::kCustomJob;
  if (failed != nullptr) {
    job.state = JobState::kFailed;
    job.reason = FailureOf(*failed, job.max_retries);
  } else if (job.type == JobType::kRayJob && driver_succeeded) {
    job.state = JobState::kSucceeded;
    job.reason.clear();
  } else if (all_succeeded) {
    job.state = JobState::kSucceeded;
    job.reason.clear();
  } else if (any_placed) {
    job.state = JobState::kRunning;
    if (job.started_ms == 0) job.started_ms = clock_.UnixMillis();
  } else {
    job.state = JobState::kPending;
  }
  if (IsTerminal(job.state)) {
    job.finished_ms = clock_.UnixMillis();
    if (job.type == JobType::kRayServe) {
      job.serve = {"STOPPED", "the job ended: " + job.reason, "", {}};
    }
    for (auto& t : job.tasks) {
      if (IsTerminal(t.state)) continue;
      // Ray processes are stopped because their job ended; unfinished custom tasks are cancelled.
      t.state =
          (ray && t.state != TaskState::kPending) ? TaskState::kStopped : TaskState::kCancelled;
    }
  }
  // Free the cards of tasks that ended (succeeded, failed, stopped, cancelled).
  if (q.cards) {
    for (auto& t : job.tasks) {
      if (IsTerminal(t.state) && t.allocation) {
        q.cards->Release(t.allocation->id);
        t.allocation.reset();
      }
    }
  }
  return job.state != before;
}

void QueueService::Schedule(QueueState& q, std::vector<std::string>& changed) {
  if (!q.cards) return;
  std::vector<JobRecord*> order;
  for (auto& [id, job] : q.jobs) {
    if (!IsTerminal(job.state)) order.push_back(&job);
  }
  std::stable_sort(order.begin(), order.end(), [](const JobRecord* a, const JobRecord* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    return a->seq < b->seq;
  });
  for (JobRecord* job : order) {
    const bool waiting = std::any_of(job->tasks.begin(), job->tasks.end(), [](const TaskRecord& t) {
      return t.state == TaskState::kPending;
    });
    if (!waiting) continue;
    JobPlacement p = q.cards->PlaceJob(*job, q.record.strategy, job->gang);
    bool job_changed = p.placed > 0;
    for (auto& t : job->tasks) {
      if (t.state != TaskState::kPlaced) continue;
      std::string id = fmt::format("{}/{}/{}/{}-{}.{}", job->account, job->queue, job->id,
                                   NameOf(t.role), t.index, t.attempt);
      if (t.workload_id != id) {
        t.workload_id = std::move(id);
        t.enforcement = q.record.enforcement;  // This attempt keeps it (docs/mgpu.md).
        job_changed = true;
      }
    }
    const std::string reason = p.complete ? "" : "waiting for cards: " + p.reason;
    if (job->reason != reason) {
      job->reason = reason;
      job_changed = true;
    }
    if (job_changed) {
      AdvanceJob(q, *job);
      changed.push_back(job->id);
    }
    if (!p.complete) break;  // Strict FIFO: later jobs wait behind this one.
  }
}

void QueueService::ReconcileOnce() {
  std::lock_guard lock(mu_);
  for (auto& [key, q] : queues_) {
    if (q.cards) {
      for (const auto& node : q.record.nodes) {
        // A node no agent ever registered has run nothing that could be lost. IsReady first:
        // Node() copies the node's whole last report, which only the rare NotReady case needs.
        const NodeId id(node);
        q.cards->SetNodeReady(node, registry_.IsReady(id) || !registry_.Node(id).has_value());
      }
    }
    std::vector<std::string> changed;
    for (auto& [id, job] : q.jobs) {
      if (IsTerminal(job.state)) continue;
      bool c = RescheduleLost(q, job);
      c = ObserveAgent(q, job) || c;
      c = AdvanceJob(q, job) || c;
      if (c) changed.push_back(id);
    }
    Schedule(q, changed);
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    for (const auto& id : changed) {
      if (Status st = PersistJob(q, q.jobs.at(id)); !st.ok()) {
        spdlog::warn("queues: cannot save job {}: {}", id, st.error().message);
      }
    }
    PruneFinished(q);
  }
  Publish();
}

void QueueService::PruneFinished(QueueState& q) {
  std::vector<const JobRecord*> finished;
  for (const auto& [id, job] : q.jobs) {
    if (IsTerminal(job.state)) finished.push_back(&job);
  }
  const auto keep = static_cast<size_t>(std::max(0, options_.max_finished_jobs_per_queue));
  if (finished.size() <= keep) return;
  std::sort(finished.begin(), finished.end(),
            [](const JobRecord* a, const JobRecord* b) { return a->seq < b->seq; });
  finished.resize(finished.size() - keep);
  // One transaction a pass, within the store's limit (etcd's); later passes take the rest.
  finished.resize(std::min(finished.size(), store_.max_commit_keys()));
  std::vector<store::Mutation> batch;
  std::vector<std::string> ids;
  for (const JobRecord* job : finished) {
    auto version = q.job_versions.find(job->id);
    store::Key key{job->account, std::string(kJobKind), job->StoreName()};
    batch.push_back(store::Remove{std::move(key), version == q.job_versions.end()
                                                      ? std::nullopt
                                                      : std::optional<int64_t>(version->second)});
    ids.push_back(job->id);
  }
  if (auto done = store_.Commit(std::move(batch)); !done.has_value()) {
    spdlog::warn("queues: cannot delete {} finished jobs of queue {}: {}", ids.size(),
                 q.record.name, done.error().message);
    return;  // Kept in memory and the Store alike; the next pass tries again.
  }
  for (const auto& id : ids) {
    q.jobs.erase(id);
    q.job_versions.erase(id);
  }
  spdlog::info("queues: queue {} keeps its newest {} finished jobs; deleted {} older ones",
               q.record.name, keep, ids.size());
}

void QueueService::Publish() {
  std::map<std::string, std::vector<protocol::WorkloadDesired>> desired;
  // Every task of a stored job keeps its logs on its node (the job's logs route reads them);
  // once the job or its queue is deleted, the agent removes them (docs/security.md, "Logs").
  std::map<std::string, std::vector<std::string>> kept;
  for (const auto& [key, q] : queues_) {
    for (const auto& n : q.record.nodes) desired[n];
    for (const auto& [id, job] : q.jobs) {
      for (const auto& t : job.tasks) {
        if (!t.node.empty() && !t.workload_id.empty()) kept[t.node].push_back(t.workload_id);
      }
      if (IsTerminal(job.state)) continue;
      for (const auto& t : job.tasks) {
        if (t.state != TaskState::kPlaced && t.state != TaskState::kRunning) continue;
        TaskPlan plan = PlanTaskWorkload(
            {q.record, job, t, options_.ray,
             t.role == TaskRole::kServe && t.agent_state.empty() && HeadDashboardAnswered(job)});
        if (plan.broken) spdlog::warn("queues: job {}: {}", job.id, plan.waiting);
        if (plan.workload) desired[t.node].push_back(std::move(*plan.workload));
      }
    }
  }
  for (const auto& [node, ids] : published_kept_) kept[node];  // Nodes whose last job went.
  for (auto& [node, ids] : kept) {
    std::sort(ids.begin(), ids.end());
    auto it = published_kept_.find(node);
    if (it != published_kept_.end() && it->second == ids) continue;
    registry_.SetKeptLogs(kWorkloadSource, NodeId(node), ids);
    if (ids.empty()) {
      published_kept_.erase(node);
    } else {
      published_kept_[node] = ids;
    }
  }
  for (const auto& [node, list] : published_) desired[node];  // Nodes that lost their queue.
  bool any_change = false;
  std::vector<NodeId> busy;
  for (auto& [node, list] : desired) {
    if (!list.empty()) busy.emplace_back(node);
    auto it = published_.find(node);
    if (it != published_.end() && it->second == list) continue;
    registry_.SetWorkloads(kWorkloadSource, NodeId(node), list);
    published_[node] = list;
    any_change = true;
  }
  if (any_change) registry_.RetainWorkloadNodes(kWorkloadSource, busy);
}

bool QueueService::HeadDashboardAnswered(const JobRecord& job) const {
  for (const auto& t : job.tasks) {
    if (t.role == TaskRole::kHead) return DashboardAnswered(registry_.Workload(t.workload_id));
  }
  return false;
}

void QueueService::Wake() { loop_.Wake(); }

void QueueService::Start() { loop_.Start(); }

void QueueService::Stop() { loop_.Stop(); }

}  // namespace carve::server::queues
