// The agent's three threads: watcher (registration + desired-state long-poll), apply loop and
// status reporter. See agent.h for the contract.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <functional>

#include "agent/node/agent.h"
#include "agent/node/backoff.h"

namespace carve::agent::node {
namespace {

constexpr size_t kMaxPendingEvents = 1000;

uint64_t SeedFor(const std::string& node_id, int salt) {
  return std::hash<std::string>{}(node_id) ^
         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
         static_cast<uint64_t>(salt);
}

}  // namespace

void Agent::WatchLoop() {
  Backoff backoff(options_.retry_initial, options_.retry_max, SeedFor(options_.node_id, 1));
  uint64_t after = 0;
  while (!stopping_) {
    if (need_register_) {
      if (!RegisterOnce()) {
        if (!SleepFor(backoff.Next())) return;
        continue;
      }
      backoff.Reset();
      after = 0;  // A new registration fetches the whole desired state again.
    }
    const std::string epoch = this->epoch();
    Result<protocol::DesiredState> d =
        control_.WatchDesired(options_.node_id, epoch, after, options_.watch_wait);
    if (!d) {
      if (d.error().code == ErrorCode::kNotFound) need_register_ = true;
      spdlog::warn("node {}: desired-state watch failed: {}", options_.node_id, d.error().message);
      if (!SleepFor(backoff.Next())) return;
      continue;
    }
    backoff.Reset();
    if (d->epoch != epoch) {
      // The server restarted: its versions start over, so the state counts as new, and it
      // does not know this agent's registration yet.
      spdlog::info("node {}: server epoch changed ({} -> {}); registering again", options_.node_id,
                   epoch, d->epoch);
      need_register_ = true;
    }
    {
      std::lock_guard lock(mu_);
      if (!desired_ || desired_->epoch != d->epoch || desired_->version != d->version) {
        desired_ = *d;
        desired_new_ = true;
        cv_.notify_all();
      }
    }
    after = d->version;
  }
}

void Agent::ApplyLoop() {
  while (!stopping_) {
    ApplyOnce();
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, options_.loop_interval, [&] { return stopping_ || desired_new_; });
  }
}

void Agent::ApplyOnce() {
  std::optional<protocol::DesiredState> d;
  bool fresh = false;
  {
    std::lock_guard lock(mu_);
    d = desired_;
    fresh = desired_new_;
    desired_new_ = false;
  }
  std::vector<std::string> events;
  if (d) {
    std::vector<protocol::WorkloadDesired> desired = d->workloads;
    for (auto& p : WorkloadManager::Placeholders(d->unreadable)) desired.push_back(std::move(p));
    workloads_->StopUndesired(desired);
    workloads_->RefuseUnreadable(d->unreadable);
    // Logs change owners only with the desired state: the directory is read once per version.
    if (fresh && d->logs_listed) workloads_->RemoveUnlistedLogs(desired, d->kept_logs);
    for (std::string& e : gpus_->Apply(d->gpus, workloads_->BusyGpus())) {
      events.push_back(std::move(e));
    }
    if (stopping_) return;  // Apply gave up mid-carve: start nothing on a half-carved node.
    workloads_->StartMissing(d->workloads);
  }
  workloads_->Poll();
  for (std::string& e : workloads_->TakeEvents()) events.push_back(std::move(e));
  if (fence_ && fence_->fenced() != fenced_seen_) {
    events.push_back(
        fmt::format("the fence stopped {} workload(s) of node {} while its agent was not answering",
                    fence_->fenced() - fenced_seen_, options_.node_id));
    spdlog::warn("{}", events.back());
    fenced_seen_ = fence_->fenced();
  }
  bool changed = workloads_->TakeChanged() || !events.empty();

  const bool metrics_due = clock_.Now() - last_metrics_ >= Heartbeat();
  if (metrics_due) last_metrics_ = clock_.Now();
  std::vector<protocol::GpuStatus> gpus = gpus_->Statuses(metrics_due);
  if (metrics_due) {
    workloads_->HoldShareQuotas(gpus);
    for (std::string& e : workloads_->TakeEvents()) events.push_back(std::move(e));
    changed = workloads_->TakeChanged() || changed || !events.empty();
  }
  std::vector<protocol::WorkloadStatus> workloads = workloads_->Statuses();
  bool all_placed = true;
  for (const auto& w : workloads) {
    const bool terminal = protocol::IsFinal(w.state);
    all_placed = all_placed && (w.pid != 0 || terminal);
  }

  std::lock_guard lock(mu_);
  if (!metrics_due) {
    for (protocol::GpuStatus& g : gpus) {
      for (const protocol::GpuStatus& old : status_.gpus) {
        if (old.index != g.index) continue;
        g.utilization_percent = old.utilization_percent;
        g.memory_used_mib = old.memory_used_mib;
        g.processes = old.processes;
      }
    }
  }
  uint64_t applied = status_.applied_version;
  // Only a desired state of the server the agent is registered with counts: after a server
  // restart, versions start over, and an old state's version would read as acted on.
  if (d && d->epoch == epoch_ && gpus_->AllApplied() && all_placed) applied = d->version;
  changed = changed || applied != status_.applied_version;
  status_.applied_version = applied;
  status_.gpus = std::move(gpus);
  status_.workloads = std::move(workloads);
  for (std::string& e : events) pending_events_.push_back(std::move(e));
  if (pending_events_.size() > kMaxPendingEvents) {
    pending_events_.erase(pending_events_.begin(),
                          pending_events_.end() - static_cast<long>(kMaxPendingEvents));
  }
  if (metrics_due) telemetry_dirty_ = true;
  if (changed) {
    ++status_version_;
    report_now_ = true;
    cv_.notify_all();
  }
  ++apply_passes_;
}

void Agent::ReportLoop() {
  Backoff backoff(options_.retry_initial, options_.retry_max, SeedFor(options_.node_id, 2));
  auto next = std::chrono::steady_clock::now();
  while (!stopping_) {
    {
      std::unique_lock lock(mu_);
      cv_.wait_until(lock, next, [&] { return stopping_ || report_now_; });
      if (stopping_) return;
      report_now_ = false;
    }
    next = std::chrono::steady_clock::now() + Heartbeat();
    if (need_register_) {
      // The watcher registers (one backoff, one writer); RegisterOnce wakes us when done.
      next = std::chrono::steady_clock::now() + options_.loop_interval;
      continue;
    }
    // Between changes a heartbeat says only "alive, with status version N"; the full status
    // goes when it changed, when the server asks, or with telemetry every telemetry_interval.
    protocol::StatusReport report;
    protocol::Heartbeat beat;
    bool full = false;
    {
      std::lock_guard lock(mu_);
      const auto now = std::chrono::steady_clock::now();
      full = status_version_ != sent_version_ || server_wants_status_ ||
             !pending_events_.empty() ||
             (telemetry_dirty_ && now - last_full_status_ >= options_.telemetry_interval);
      if (full) {
        report = status_;
        report.node_id = options_.node_id;
        report.epoch = epoch_;
        report.status_version = status_version_;
        report.events.swap(pending_events_);
      } else {
        beat = {options_.node_id, epoch_, sent_version_, status_.applied_version};
      }
    }
    if (!full) {
      Result<protocol::HeartbeatReply> hb = control_.Heartbeat(beat);
      if (!hb) {
        if (hb.error().code == ErrorCode::kNotFound) need_register_ = true;
        spdlog::warn("node {}: heartbeat failed: {}", options_.node_id, hb.error().message);
        next = std::chrono::steady_clock::now() + backoff.Next();
        continue;
      }
      backoff.Reset();
      if (hb->reregister) {
        spdlog::info("node {}: the server asks this node to register again", options_.node_id);
        need_register_ = true;
        next = std::chrono::steady_clock::now();
      } else if (hb->send_status) {
        std::lock_guard lock(mu_);
        server_wants_status_ = true;
        next = std::chrono::steady_clock::now();
      }
      continue;
    }
    Result<protocol::StatusReply> reply = control_.Report(report);
    if (!reply) {
      {
        std::lock_guard lock(mu_);  // Keep the events for the next report.
        pending_events_.insert(pending_events_.begin(), report.events.begin(), report.events.end());
      }
      if (reply.error().code == ErrorCode::kNotFound) need_register_ = true;
      spdlog::warn("node {}: status report failed: {}", options_.node_id, reply.error().message);
      // Back off, but wake early when the watcher registers again (report_now_): after a
      // server restart the first report must follow the registration at once, or the node
      // times out while this loop still sleeps off the outage.
      next = std::chrono::steady_clock::now() + backoff.Next();
      continue;
    }
    backoff.Reset();
    {
      std::lock_guard lock(mu_);
      sent_version_ = report.status_version;
      server_wants_status_ = false;
      telemetry_dirty_ = false;
      last_full_status_ = std::chrono::steady_clock::now();
    }
    if (reply->reregister) {
      spdlog::info("node {}: the server asks this node to register again", options_.node_id);
      need_register_ = true;
      next = std::chrono::steady_clock::now();
    }
  }
}

}  // namespace carve::agent::node
