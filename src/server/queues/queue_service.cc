// QueueService: the API half (queues, jobs, recovery). The reconcile half is in
// queue_reconcile.cc, the GPU view in queue_view.cc.
#include "server/queues/queue_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "store/commit_in_steps.h"

namespace carve::server::queues {

namespace {

std::string JobId(int64_t seq) { return fmt::format("job-{:04d}", seq); }

store::Key QueueKeyOf(const QueueRecord& q) { return {q.account, std::string(kQueueKind), q.name}; }
store::Key JobKeyOf(const JobRecord& j) {
  return {j.account, std::string(kJobKind), j.StoreName()};
}

// True when the store answers that it holds no record under `key`; false when it holds one or
// cannot say.
bool Absent(store::Store& store, const store::Key& key) {
  auto stored = store.Get(key);
  return !stored.has_value() && stored.error().code == ErrorCode::kNotFound;
}

}  // namespace

QueueService::QueueService(store::Store& store, nodes::NodeRegistry& registry,
                           nodes::NodeClaims& claims, QueueOptions options)
    : store_(store),
      registry_(registry),
      claims_(claims),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock::Get()),
      loop_(options_.reconcile_interval, [this] { ReconcileOnce(); }),
      wake_(registry_.AddListener([this] { Wake(); })) {}

QueueService::~QueueService() {
  wake_.Reset();  // Before anything a wake would touch goes.
  Stop();
}

Result<QueueService::QueueState*> QueueService::Find(const std::string& account,
                                                     const std::string& name) {
  auto it = queues_.find({account, name});
  if (it == queues_.end()) {
    return NotFound(fmt::format("queue '{}' does not exist in account {}", name, account));
  }
  return &it->second;
}

Result<const QueueService::QueueState*> QueueService::Find(const std::string& account,
                                                           const std::string& name) const {
  auto it = queues_.find({account, name});
  if (it == queues_.end()) {
    return NotFound(fmt::format("queue '{}' does not exist in account {}", name, account));
  }
  return &it->second;
}

std::vector<QueueNode> QueueService::NodesOf(const QueueRecord& q) const {
  std::vector<QueueNode> nodes;
  for (const auto& n : claims_.NodesOf(q.Owner())) {
    nodes.push_back({n.id.value(), std::string(n.type->id)});
  }
  return nodes;  // In name order.
}

Result<std::unique_ptr<QueueCards>> QueueService::CardsFor(const QueueRecord& q) const {
  CARVE_ASSIGN_OR_RETURN(QueueCards cards,
                         QueueCards::Create(q.mgpu, NodesOf(q), options_.memory_reserve_mib));
  return std::make_unique<QueueCards>(std::move(cards));
}

Status QueueService::Recover() {
  CARVE_ASSIGN_OR_RETURN(auto queue_records, store_.ListAllAccounts(std::string(kQueueKind)));
  CARVE_ASSIGN_OR_RETURN(auto job_records, store_.ListAllAccounts(std::string(kJobKind)));
  std::lock_guard lock(mu_);
  nodes::SyncFromRegistry(registry_, claims_);
  for (const auto& r : queue_records) {
    auto parsed = QueueFromJson(nlohmann::json::parse(r.body, nullptr, false));
    if (!parsed.has_value()) {
      spdlog::error("queues: skipping {}: {}", r.key.name, parsed.error().message);
      continue;
    }
    QueueState state;
    state.record = std::move(parsed).value();
    state.version = r.version;
    std::vector<NodeId> ids;
    for (const auto& n : state.record.nodes) ids.emplace_back(n);
    Status claimed = claims_.ClaimSpecific(state.record.Owner(), ids);
    if (claimed.ok()) {
      auto cards = CardsFor(state.record);
      if (cards.has_value())
        state.cards = std::move(cards).value();
      else
        spdlog::error("queues: queue '{}': {}", state.record.name, cards.error().message);
    } else {
      spdlog::error("queues: queue '{}' cannot re-claim its nodes: {}", state.record.name,
                    claimed.error().message);
    }
    for (const auto& n : claims_.NodesOf(state.record.Owner())) {
      for (int g = 0; g < n.type->gpu_count; ++g) registry_.SetGpuLayout(n.id, {g, false, {}});
    }
    queues_.emplace(QueueKey{state.record.account, state.record.name}, std::move(state));
  }
  for (const auto& r : job_records) {
    auto parsed = JobFromJson(nlohmann::json::parse(r.body, nullptr, false));
    if (!parsed.has_value()) {
      spdlog::error("queues: skipping job {}: {}", r.key.name, parsed.error().message);
      continue;
    }
    JobRecord job = std::move(parsed).value();
    auto q = queues_.find({job.account, job.queue});
    if (q == queues_.end()) {
      spdlog::error("queues: job {} names queue '{}', which is gone", job.id, job.queue);
      continue;
    }
    for (const auto& t : job.tasks) {
      if (IsTerminal(t.state) || t.state == TaskState::kPending || !t.allocation) continue;
      if (!q->second.cards) continue;
      if (Status st = q->second.cards->Restore(*t.allocation); !st.ok()) {
        spdlog::error("queues: job {} task {}: {}", job.id, t.index, st.error().message);
      }
    }
    q->second.job_versions[job.id] = r.version;
    q->second.jobs.emplace(job.id, std::move(job));
  }
  Publish();
  return OkStatus();
}

Result<QueueRecord> QueueService::CreateQueue(const std::string& account,
                                              const CreateQueueRequest& request) {
  std::lock_guard lock(mu_);
  if (queues_.count({account, request.name}) != 0) {
    return AlreadyExists(
        fmt::format("queue '{}' already exists in account {}", request.name, account));
  }
  int held = 0;
  for (const auto& [key, q] : queues_) held += key.first == account ? 1 : 0;
  if (held >= options_.max_queues_per_account) {
    return ResourceExhausted(fmt::format(
        "account {} already holds {} queues, the most one account may hold; delete one first",
        account, options_.max_queues_per_account));
  }
  QueueRecord q;
  q.account = account;
  q.name = request.name;
  q.mgpu = request.mgpu;
  q.strategy = request.strategy;
  q.enforcement = request.enforcement.value_or(options_.default_enforcement);
  q.gang = request.gang;
  q.instance_type = request.instance_type;
  q.count = request.count;
  q.requested_nodes = request.nodes;
  q.created_ms = clock_.UnixMillis();
  nodes::SyncFromRegistry(registry_, claims_);
  if (!request.instance_type.empty()) {
    CARVE_ASSIGN_OR_RETURN(auto ids,
                           claims_.Claim(q.Owner(), request.instance_type, request.count));
    (void)ids;
  } else {
    std::vector<NodeId> ids;
    for (const auto& n : request.nodes) ids.emplace_back(n);
    CARVE_RETURN_IF_ERROR(claims_.ClaimSpecific(q.Owner(), ids));
  }
  auto claimed = claims_.NodesOf(q.Owner());
  for (const auto& n : claimed) q.nodes.push_back(n.id.value());
  auto cards = CardsFor(q);
  if (!cards.has_value()) {
    claims_.Release(q.Owner());
    return cards.error();
  }
  auto written = store_.Create(QueueKeyOf(q), ToJson(q).dump());
  if (!written.has_value()) {
    claims_.Release(q.Owner());
    return written.error();
  }
  for (const auto& n : claimed) {
    for (int g = 0; g < n.type->gpu_count; ++g) registry_.SetGpuLayout(n.id, {g, false, {}});
  }
  QueueState state;
  state.record = q;
  state.version = written->version;
  state.cards = std::move(cards).value();
  queues_.emplace(QueueKey{account, q.name}, std::move(state));
  return q;
}

Result<QueueRecord> QueueService::UpdateQueue(const std::string& account, const std::string& name,
                                              const nlohmann::json& body) {
  std::lock_guard lock(mu_);
  CARVE_ASSIGN_OR_RETURN(QueueState * q, Find(account, name));
  CARVE_ASSIGN_OR_RETURN(QueueRecord updated, ApplyQueueUpdate(q->record, body));
  CARVE_ASSIGN_OR_RETURN(auto written,
                         store_.Update(QueueKeyOf(updated), ToJson(updated).dump(), q->version));
  q->record = updated;
  q->version = written.version;
  return updated;
}

Result<QueueRecord> QueueService::GetQueue(const std::string& account,
                                           const std::string& name) const {
  std::lock_guard lock(mu_);
  CARVE_ASSIGN_OR_RETURN(const QueueState* q, Find(account, name));
  return q->record;
}

std::vector<QueueRecord> QueueService::ListQueues(const std::string& account) const {
  std::lock_guard lock(mu_);
  std::vector<QueueRecord> out;
  for (const auto& [key, q] : queues_) {
    if (key.first == account) out.push_back(q.record);
  }
  return out;
}

Status QueueService::DeleteQueue(const std::string& account, const std::string& name) {
  std::lock_guard lock(mu_);
  CARVE_ASSIGN_OR_RETURN(QueueState * q, Find(account, name));
  std::vector<std::string> busy;
  for (const auto& [id, job] : q->jobs) {
    if (!IsTerminal(job.state)) busy.push_back(fmt::format("{} ({})", id, NameOf(job.state)));
  }
  if (!busy.empty()) {
    return FailedPrecondition(fmt::format(
        "queue '{}' still has {} unfinished job{}: {}; cancel them or wait for them to finish "
        "before deleting the queue",
        name, busy.size(), busy.size() == 1 ? "" : "s", fmt::join(busy, ", ")));
  }
  // Its finished jobs go first, in as many commits as the store needs (etcd: 127 keys each), and
  // the queue last: a failure part-way leaves the queue with fewer finished jobs, never jobs
  // without a queue.
  // A step whose answer was lost (etcd: an unknown outcome) may have removed its jobs after all;
  // the next attempt then finds them NotFound, and forgets the ones the store no longer holds.
  for (int attempt = 0;; ++attempt) {
    std::vector<store::Mutation> jobs;
    std::vector<std::string> ids;
    for (const auto& [id, job] : q->jobs) {
      jobs.push_back(store::Remove{JobKeyOf(job), {}});
      ids.push_back(id);
    }
    size_t landed = 0;
    auto removed = store::CommitInSteps(store_, std::move(jobs),
                                        store::Remove{QueueKeyOf(q->record), q->version}, &landed);
    if (removed.has_value()) break;
    const bool not_found = removed.error().code == ErrorCode::kNotFound;
    if (not_found && Absent(store_, QueueKeyOf(q->record))) break;  // The last step landed.
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i >= landed && !(not_found && Absent(store_, JobKeyOf(q->jobs.at(ids[i]))))) continue;
      q->jobs.erase(ids[i]);
      q->job_versions.erase(ids[i]);
    }
    if (attempt == 1 || !not_found) return removed.error();
  }
  claims_.Release(q->record.Owner());
  queues_.erase({account, name});
  Publish();
  return OkStatus();
}

Result<JobRecord> QueueService::SubmitJob(const std::string& account, const std::string& queue,
                                          const JobSubmission& sub) {
  std::unique_lock lock(mu_);
  CARVE_ASSIGN_OR_RETURN(QueueState * q, Find(account, queue));
  if (!q->cards) {
    return Unavailable(fmt::format(
        "queue '{}' could not re-claim its nodes ({}) after a restart; see the server log", queue,
        fmt::join(q->record.nodes, ", ")));
  }
  int unfinished = 0;
  for (const auto& [id, j] : q->jobs) unfinished += IsTerminal(j.state) ? 0 : 1;
  if (unfinished >= options_.max_unfinished_jobs_per_queue) {
    return ResourceExhausted(fmt::format(
        "queue '{}' holds {} unfinished jobs, the most one queue may hold; wait for some to "
        "finish, or cancel some",
        queue, options_.max_unfinished_jobs_per_queue));
  }
  JobRecord job;
  job.account = account;
  job.queue = queue;
  job.seq = q->record.next_job_seq;
  job.id = JobId(job.seq);
  job.name = sub.name;
  job.type = sub.type;
  job.priority = sub.priority;
  job.gang = sub.gang.value_or(q->record.gang);
  job.max_retries = sub.max_retries;
  job.command = sub.command;
  job.entrypoint = sub.entrypoint;
  job.parameters = sub.parameters;
  job.environment = sub.environment;
  job.serve_config = sub.serve_config;
  if (job.type == JobType::kRayServe) job.serve.status = "WAITING_FOR_CLUSTER";
  job.submitted_ms = clock_.UnixMillis();
  PlannedJob plan = PlanTasks(sub, q->record);
  job.warnings = plan.warnings;
  job.tasks = std::move(plan.tasks);
  if (!plan.failure.empty()) {
    job.state = JobState::kFailed;
    job.reason = plan.failure;
    job.finished_ms = job.submitted_ms;
  } else if (auto fits = q->cards->FitsWhenIdle(job, job.gang); !fits.has_value()) {
    job.state = JobState::kFailed;
    job.reason = fmt::format("the job can never run on queue '{}' ({}): {}", queue,
                             fmt::join(q->record.nodes, ", "), fits.error().message);
    job.finished_ms = job.submitted_ms;
    for (auto& t : job.tasks) t.state = TaskState::kCancelled;
  } else {
    job.state = JobState::kPending;
  }
  QueueRecord updated = q->record;
  ++updated.next_job_seq;
  std::vector<store::Mutation> batch;
  batch.push_back(store::Put{JobKeyOf(job), ToJson(job).dump(), std::nullopt});
  batch.push_back(store::Put{QueueKeyOf(updated), ToJson(updated).dump(), q->version});
  CARVE_ASSIGN_OR_RETURN(auto written, store_.Commit(std::move(batch)));
  q->record = updated;
  q->job_versions[job.id] = written[0].version;
  q->version = written[1].version;
  q->jobs.emplace(job.id, job);
  lock.unlock();
  Wake();
  return job;
}

Result<JobRecord> QueueService::GetJob(const std::string& account, const std::string& queue,
                                       const std::string& id) const {
  std::lock_guard lock(mu_);
  CARVE_ASSIGN_OR_RETURN(const QueueState* q, Find(account, queue));
  auto it = q->jobs.find(id);
  if (it == q->jobs.end()) {
    return NotFound(fmt::format("job '{}' does not exist in queue '{}'", id, queue));
  }
  return it->second;
}

Result<std::vector<JobRecord>> QueueService::ListJobs(const std::string& account,
                                                      const std::string& queue) const {
  std::lock_guard lock(mu_);
  CARVE_ASSIGN_OR_RETURN(const QueueState* q, Find(account, queue));
  std::vector<JobRecord> out;
  for (const auto& [id, job] : q->jobs) out.push_back(job);
  return out;
}

Result<QueueService::JobPage> QueueService::ListJobsPage(const std::string& account,
                                                        const std::string& queue,
                                                        int64_t after_seq, int limit) const {
  std::lock_guard lock(mu_);
  CARVE_ASSIGN_OR_RETURN(const QueueState* q, Find(account, queue));
  std::vector<const JobRecord*> after;
  for (const auto& [id, job] : q->jobs) {
    if (job.seq > after_seq) after.push_back(&job);
  }
  std::sort(after.begin(), after.end(),
            [](const JobRecord* a, const JobRecord* b) { return a->seq < b->seq; });
  JobPage page;
  for (const JobRecord* j : after) {
    if (static_cast<int>(page.jobs.size()) == limit) {
      page.next_after = page.jobs.back().seq;
      break;
    }
    page.jobs.push_back(*j);
  }
  return page;
}

Result<JobRecord> QueueService::CancelJob(const std::string& account, const std::string& queue,
                                          const std::string& id) {
  std::lock_guard lock(mu_);
  CARVE_ASSIGN_OR_RETURN(QueueState * q, Find(account, queue));
  auto it = q->jobs.find(id);
  if (it == q->jobs.end()) {
    return NotFound(fmt::format("job '{}' does not exist in queue '{}'", id, queue));
  }
  JobRecord job = it->second;
  if (IsTerminal(job.state)) {
    return FailedPrecondition(fmt::format(
        "job '{}' is {} already; only unfinished jobs can be cancelled", id, NameOf(job.state)));
  }
  job.state = JobState::kCancelled;
  job.reason = "cancelled by the user";
  job.finished_ms = clock_.UnixMillis();
  if (job.type == JobType::kRayServe) {
    job.serve = {"STOPPED", "cancelled: the cluster stops, and its applications with it", "", {}};
  }
  std::vector<core::AllocationId> to_free;
  for (auto& t : job.tasks) {
    if (!IsTerminal(t.state)) t.state = TaskState::kCancelled;
    if (t.allocation) to_free.push_back(t.allocation->id);
    t.allocation.reset();
  }
  CARVE_RETURN_IF_ERROR(PersistJob(*q, job));
  if (q->cards) {
    for (auto id : to_free) q->cards->Release(id);
  }
  it->second = job;
  Publish();
  return job;
}

Status QueueService::PersistJob(QueueState& q, const JobRecord& job) {
  auto it = q.job_versions.find(job.id);
  const int64_t expected = it == q.job_versions.end() ? 0 : it->second;
  CARVE_ASSIGN_OR_RETURN(auto written, store_.Update(JobKeyOf(job), ToJson(job).dump(), expected));
  q.job_versions[job.id] = written.version;
  return OkStatus();
}

}  // namespace carve::server::queues
