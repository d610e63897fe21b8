// QueueCards: the cards of one queue's nodes and the shares placed on them, over the queue's
// nodes::NodePool (the control plane's one capacity model; SageMaker copies use the same), whose
// engine owns the per-card rules: core sums to <= 100, memory to <= the card's memory less the
// reserve, at most 16 workers per card, SPREAD or BINPACK.
//
// An mGPU queue puts every card in mGPU mode and places a task's share (core >= 100 takes that
// many idle cards); a queue without mGPU uses cards whole. Tasks without a GPU (a Ray head
// without head parameters, the Ray driver) need no capacity: they go to the head's node, or the
// queue's first node.
// Not thread-safe: the service serialises calls.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "core/placement.h"
#include "server/nodes/node_pool.h"
#include "server/queues/queue_model.h"

namespace carve::server::queues {

using QueueNode = nodes::PoolNode;

struct JobPlacement {
  int placed = 0;        // Tasks placed by this call.
  bool complete = true;  // Every pending task of the job is now placed.
  std::string reason;    // When not complete: what did not fit.
};

class QueueCards {
 public:
  // NotFound for an instance type the catalog does not know; InvalidArgument when a card's
  // memory does not exceed the reserve.
  static Result<QueueCards> Create(bool mgpu, std::vector<QueueNode> nodes,
                                   int64_t reserve_memory_mib);

  // Places the job's Pending tasks in index order. Non-gang: one at a time, stopping at the first
  // that does not fit. Gang: all or none. A placed task gets its allocation, node, a new attempt
  // and state Placed; nothing changes for tasks that were not placed.
  JobPlacement PlaceJob(JobRecord& job, core::Strategy strategy, bool gang);

  // Whether the job's GPU tasks could all be placed on these nodes when every card is idle
  // (gang) or each on its own (not gang); the reason when not.
  Result<void> FitsWhenIdle(const JobRecord& job, bool gang) const;

  // A node that is not ready (its agent stopped reporting) gets no new tasks; its placed tasks
  // keep their allocations until released. Unknown names are ignored.
  void SetNodeReady(const std::string& node, bool ready);
  bool NodeReady(const std::string& node) const;

  // Frees an allocation made by PlaceJob or Restore; an unknown id is ignored.
  void Release(core::AllocationId id);
  // Re-applies a persisted allocation (after a restart). Errors are PlacementEngine::Restore's.
  Status Restore(const core::AllocationRecord& allocation);

  std::vector<core::GpuUsage> Gpus() const { return pool_.engine().Gpus(); }
  const nodes::NodePool& pool() const { return pool_; }
  bool mgpu() const { return pool_.options().mode == core::GpuMode::kMgpu; }
  const std::vector<QueueNode>& nodes() const { return pool_.nodes(); }

 private:
  explicit QueueCards(nodes::NodePool pool) : pool_(std::move(pool)) {}
  static JobPlacement Place(nodes::NodePool& pool, JobRecord& job, core::Strategy strategy,
                            bool gang, const std::string& first_node);
  std::string FirstReadyNode() const;  // Where GPU-less tasks go; "" when none is ready.

  nodes::NodePool pool_;
};

}  // namespace carve::server::queues
