// QueueService: the GPU view and the figures behind the metrics. Allocated figures come from the
// placement state; measured ones from the agents' last reports (NodeRegistry).
#include <fmt/format.h>

#include <set>

#include "server/queues/queue_service.h"

namespace carve::server::queues {

QueueGpuView QueueService::ViewLocked(const QueueState& q) const {
  QueueGpuView v;
  v.account = q.record.account;
  v.queue = q.record.name;
  v.mgpu = q.record.mgpu;
  v.enforcement = std::string(NameOf(q.record.enforcement));
  if (!q.cards) return v;
  std::map<std::pair<std::string, int>, size_t> card_at;
  for (const auto& g : q.cards->Gpus()) {
    CardView c;
    c.node = std::string(g.node);
    c.gpu = g.index;
    c.model = g.model != nullptr ? std::string(g.model->id) : "";
    const int64_t card_memory = g.model != nullptr ? g.model->memory_mib : 0;
    c.memory_capacity_mib = g.memory_capacity_mib > 0 ? g.memory_capacity_mib : card_memory;
    if (g.busy) {  // Taken whole.
      c.core_allocated_percent = 100;
      c.memory_allocated_mib = c.memory_capacity_mib;
    } else {
      c.core_allocated_percent = g.core_used;
      c.memory_allocated_mib = g.memory_used_mib;
    }
    if (auto st = registry_.Gpu(NodeId(c.node), c.gpu)) {
      if (st->utilization_percent >= 0) c.utilization_percent = st->utilization_percent;
      if (st->memory_used_mib >= 0) c.memory_used_mib = st->memory_used_mib;
    }
    card_at[{c.node, c.gpu}] = v.cards.size();
    v.cards.push_back(std::move(c));
  }
  for (const auto& [id, job] : q.jobs) {
    for (const auto& t : job.tasks) {
      if (!t.allocation) continue;
      std::optional<protocol::WorkloadStatus> st;
      if (!t.workload_id.empty()) st = registry_.Workload(t.workload_id);
      for (int gpu : t.allocation->gpu_indexes) {
        auto at = card_at.find({t.node, gpu});
        if (at == card_at.end()) continue;
        CardView& c = v.cards[at->second];
        WorkerView w;
        w.job = job.id;
        w.task = t.index;
        w.role = NameOf(t.role);
        w.workload_id = t.workload_id;
        w.state = std::string(NameOf(t.state));
        const bool whole = t.allocation->kind == core::RequestKind::kWholeGpus ||
                           t.allocation->core_percent >= 100;
        w.core_limit_percent = whole ? 100 : t.allocation->core_percent;
        w.memory_limit_mib = whole ? c.memory_capacity_mib : t.allocation->memory_mib;
        if (st && st->core_used_percent >= 0) w.core_used_percent = st->core_used_percent;
        if (st && st->memory_used_mib >= 0) w.memory_used_mib = st->memory_used_mib;
        c.worker_views.push_back(std::move(w));
      }
    }
  }
  for (auto& c : v.cards) {
    c.workers = static_cast<int>(c.worker_views.size());
    v.core_allocated_percent += c.core_allocated_percent;
    v.core_capacity_percent += 100;
    v.memory_allocated_mib += c.memory_allocated_mib;
    v.memory_capacity_mib += c.memory_capacity_mib;
    v.workers += c.workers;
  }
  return v;
}

Result<QueueGpuView> QueueService::GpuView(const std::string& account,
                                           const std::string& queue) const {
  std::lock_guard lock(mu_);
  CARVE_ASSIGN_OR_RETURN(const QueueState* q, Find(account, queue));
  return ViewLocked(*q);
}

std::vector<QueueGpuView> QueueService::AllGpuViews() const {
  std::lock_guard lock(mu_);
  std::vector<QueueGpuView> out;
  for (const auto& [key, q] : queues_) out.push_back(ViewLocked(q));
  return out;
}

std::map<std::tuple<std::string, std::string, std::string>, int> QueueService::JobCounts() const {
  std::lock_guard lock(mu_);
  std::map<std::tuple<std::string, std::string, std::string>, int> out;
  for (const auto& [key, q] : queues_) {
    for (const auto& [id, job] : q.jobs) {
      ++out[{key.first, key.second, std::string(NameOf(job.state))}];
    }
  }
  return out;
}

std::vector<nodes::ShapeFragmentation> QueueService::Fragmentation(
    const std::string& account) const {
  std::lock_guard lock(mu_);
  std::vector<nodes::ShapeFragmentation> out;
  for (const auto& [key, q] : queues_) {
    if (key.first != account || !q.cards) continue;
    std::set<std::pair<int, int64_t>> seen;
    for (const auto& [id, job] : q.jobs) {
      if (IsTerminal(job.state)) continue;
      for (const auto& t : job.tasks) {
        if (!t.share ||
            !seen.insert({t.share->core_percent, t.share->memory_mib.value_or(0)}).second) {
          continue;
        }
        const core::Request request = q.cards->mgpu()
                                          ? core::Request::Share(*t.share)
                                          : core::Request::WholeGpus(t.share->card_count());
        auto f = q.cards->pool().Fragmentation(q.record.Owner(), request);
        if (f.has_value()) out.push_back(std::move(f).value());
      }
    }
  }
  return out;
}

}  // namespace carve::server::queues
