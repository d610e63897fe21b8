// QueueCards: tasks onto cards through the placement engine. Gang placement places task by task
// and undoes the ones it placed when a later one does not fit, so a job never holds part of its
// gang.
#include "server/queues/queue_cards.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/fleet_builders.h"

namespace carve::server::queues {
namespace {

// Node of the job's head when it has one, else the queue's first node.
std::string NodeForGpulessTask(const JobRecord& job, const TaskRecord& task,
                               const std::string& first_node) {
  if (task.role == "driver") {
    for (const auto& t : job.tasks) {
      if (t.role == "head") return t.node;  // "" while the head waits: the driver waits too.
    }
  }
  return first_node;
}

}  // namespace

Result<QueueCards> QueueCards::Create(bool mgpu, std::vector<QueueNode> nodes,
                                      int64_t reserve_memory_mib) {
  std::vector<core::NodeSpec> specs;
  for (const auto& n : nodes) {
    CARVE_ASSIGN_OR_RETURN(
        core::NodeSpec spec,
        core::NodeFromInstanceType(n.name, n.instance_type,
                                   mgpu ? core::GpuMode::kMgpu : core::GpuMode::kWhole));
    specs.push_back(std::move(spec));
  }
  core::FleetOptions options;
  options.mgpu_reserved_memory_mib = reserve_memory_mib;
  CARVE_ASSIGN_OR_RETURN(core::PlacementEngine engine,
                         core::PlacementEngine::Create(specs, options));
  return QueueCards(mgpu, std::move(nodes), std::move(specs), reserve_memory_mib,
                    std::move(engine));
}

JobPlacement QueueCards::Place(core::PlacementEngine& engine, bool mgpu, JobRecord& job,
                               core::Strategy strategy, bool gang, const std::string& first_node) {
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
                ? fmt::format("task {} ({}) waits for a ready node", t.index, t.role)
                : fmt::format("task {} ({}) waits for its head to be placed", t.index, t.role);
        break;
      }
    } else {
      core::Request request =
          mgpu ? core::Request::Share(*t.share) : core::Request::WholeGpus(t.share->card_count());
      auto placement = engine.Place(request, 1, strategy);
      if (!placement.has_value()) {
        out.complete = false;
        out.reason = placement.error().message;
        break;
      }
      if (!placement->placed()) {
        out.complete = false;
        out.reason = fmt::format("task {} ({}, {}) does not fit yet: {}", t.index, t.role,
                                 t.share->ToString(), placement->reason);
        break;
      }
      auto record = engine.Describe(placement->allocations.front());
      if (!record.has_value()) {  // Cannot happen for an id just issued; keep the engine clean.
        (void)engine.Release(placement->allocations.front());
        out.complete = false;
        out.reason = record.error().message;
        break;
      }
      allocation = *record;
      node = record->node;
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
      if (t.allocation) (void)engine.Release(t.allocation->id);
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
  return Place(engine_, mgpu_, job, strategy, gang, FirstReadyNode());
}

std::string QueueCards::FirstReadyNode() const {
  for (const auto& n : nodes_) {
    if (engine_.schedulable(n.name)) return n.name;
  }
  return "";
}

void QueueCards::SetNodeReady(const std::string& node, bool ready) {
  (void)engine_.SetSchedulable(node, ready);  // NotFound: not one of ours, nothing to do.
}

bool QueueCards::NodeReady(const std::string& node) const { return engine_.schedulable(node); }

Result<void> QueueCards::FitsWhenIdle(const JobRecord& job, bool gang) const {
  core::FleetOptions options;
  options.mgpu_reserved_memory_mib = reserve_;
  const std::string first = nodes_.empty() ? "" : nodes_.front().name;
  auto check = [&](JobRecord trial, bool together) -> Result<void> {
    CARVE_ASSIGN_OR_RETURN(core::PlacementEngine idle,
                           core::PlacementEngine::Create(specs_, options));
    for (auto& t : trial.tasks) t.state = TaskState::kPending;
    JobPlacement p = Place(idle, mgpu_, trial, core::Strategy::kBinpack, together, first);
    if (!p.complete) return ResourceExhausted(p.reason);
    return OkStatus();
  };
  if (gang) return check(job, true);
  std::vector<std::optional<core::MgpuShare>> checked;
  for (const auto& t : job.tasks) {  // Each distinct share on its own, on idle cards.
    if (t.role == "driver" || !t.share ||
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

void QueueCards::Release(core::AllocationId id) { (void)engine_.Release(id); }

Status QueueCards::Restore(const core::AllocationRecord& allocation) {
  return engine_.Restore(allocation);
}

}  // namespace carve::server::queues
