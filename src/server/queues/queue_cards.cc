// QueueCards: tasks onto cards through the placement engine. Gang placement places task by task
// and undoes the ones it placed when a later one does not fit, so a job never holds part of its
// gang.
#include "server/queues/queue_cards.h"

#include <fmt/format.h>

#include <algorithm>

namespace carve::server::queues {
namespace {

// Node of the job's head when it has one, else the queue's first node. The driver and the Serve
// deployment run beside the head: Serve deploys through the head's local dashboard.
std::string NodeForGpulessTask(const JobRecord& job, const TaskRecord& task,
                               const std::string& first_node) {
  if (task.role == TaskRole::kDriver || task.role == TaskRole::kServe) {
    for (const auto& t : job.tasks) {
      if (t.role == TaskRole::kHead)
        return t.node;  // "" while the head waits: the driver waits too.
    }
  }
  return first_node;
}

}  // namespace

Result<QueueCards> QueueCards::Create(bool mgpu, std::vector<QueueNode> nodes,
                                      int64_t reserve_memory_mib) {
  nodes::PoolOptions options;
  options.mode = mgpu ? core::GpuMode::kMgpu : core::GpuMode::kWhole;
  options.mgpu_reserve_mib = reserve_memory_mib;
  CARVE_ASSIGN_OR_RETURN(nodes::NodePool pool,
                         nodes::NodePool::Create(std::move(nodes), std::move(options)));
  return QueueCards(std::move(pool));
}

JobPlacement QueueCards::Place(nodes::NodePool& pool, JobRecord& job, core::Strategy strategy,
                               bool gang, const std::string& first_node) {
  const bool mgpu = pool.options().mode == core::GpuMode::kMgpu;
  JobPlacement out;
  std::vector<size_t> placed_now;
  for (size_t i = 0; i < job.tasks.size(); ++i) {
    TaskRecord& t = job.tasks[i];
    if (t.state != TaskState::kPending) continue;
    std::string node;
    std::optional<core::AllocationRecord> allocation;
    if (!t.share) {
      node = NodeForGpulessTask(job, t, first_node);
      if (node.empty()) {
        out.complete = false;
        out.reason =
            first_node.empty()
                ? fmt::format("task {} ({}) waits for a ready node", t.index, NameOf(t.role))
                : fmt::format("task {} ({}) waits for its head to be placed", t.index,
                              NameOf(t.role));
        break;
      }
    } else {
      core::Request request =
          mgpu ? core::Request::Share(*t.share) : core::Request::WholeGpus(t.share->card_count());
      auto placement = pool.PlaceOne(request, strategy);
      if (!placement.has_value()) {
        out.complete = false;
        out.reason = placement.error().message;
        break;
      }
      if (!placement->allocation) {
        out.complete = false;
        out.reason = fmt::format("task {} ({}, {}) does not fit yet: {}", t.index, NameOf(t.role),
                                 t.share->ToString(), placement->reason);
        break;
      }
      allocation = *placement->allocation;
      node = allocation->node;
    }
    t.allocation = allocation;
    t.gpus = allocation ? allocation->gpu_indexes : std::vector<int>{};
    t.node = node;
    t.state = TaskState::kPlaced;
    ++t.attempt;
    placed_now.push_back(i);
  }
  if (!out.complete && gang) {
    for (size_t i : placed_now) {
      TaskRecord& t = job.tasks[i];
      if (t.allocation) pool.Release(t.allocation->id);
      t.allocation.reset();
      t.gpus.clear();
      t.node.clear();
      t.state = TaskState::kPending;
      --t.attempt;
    }
    out.reason = "gang: all tasks of the job start together; " + out.reason;
    return out;
  }
  out.placed = static_cast<int>(placed_now.size());
  return out;
}

JobPlacement QueueCards::PlaceJob(JobRecord& job, core::Strategy strategy, bool gang) {
  return Place(pool_, job, strategy, gang, FirstReadyNode());
}

std::string QueueCards::FirstReadyNode() const {
  for (const auto& n : pool_.nodes()) {
    if (pool_.Ready(n.name)) return n.name;
  }
  return "";
}

void QueueCards::SetNodeReady(const std::string& node, bool ready) { pool_.SetReady(node, ready); }

bool QueueCards::NodeReady(const std::string& node) const { return pool_.Ready(node); }

Result<void> QueueCards::FitsWhenIdle(const JobRecord& job, bool gang) const {
  const std::string first = pool_.nodes().empty() ? "" : pool_.nodes().front().name;
  auto check = [&](JobRecord trial, bool together) -> Result<void> {
    CARVE_ASSIGN_OR_RETURN(nodes::NodePool idle,
                           nodes::NodePool::Create(pool_.nodes(), pool_.options()));
    for (auto& t : trial.tasks) t.state = TaskState::kPending;
    JobPlacement p = Place(idle, trial, core::Strategy::kBinpack, together, first);
    if (!p.complete) return ResourceExhausted(p.reason);
    return OkStatus();
  };
  if (gang) return check(job, true);
  std::vector<std::optional<core::MgpuShare>> checked;
  for (const auto& t : job.tasks) {  // Each distinct share on its own, on idle cards.
    if (t.role == TaskRole::kDriver || !t.share ||
        std::find(checked.begin(), checked.end(), t.share) != checked.end()) {
      continue;
    }
    checked.push_back(t.share);
    JobRecord one = job;
    one.tasks = {t};
    CARVE_RETURN_IF_ERROR(check(std::move(one), false));
  }
  return OkStatus();
}

void QueueCards::Release(core::AllocationId id) { pool_.Release(id); }

Status QueueCards::Restore(const core::AllocationRecord& allocation) {
  return pool_.Restore(allocation);
}

}  // namespace carve::server::queues
