// AgentNodeDriver: the NodeDriver for nodes run by agents. A carve becomes the GPU's entry
// in the node's desired state; the call returns once the agent reports that GPU carved exactly
// so (its MIG UUIDs are then in the registry), or fails with the agent's own error, or with
// Unavailable when the node goes NotReady or the agent does not answer within `carve_timeout`.
// Idempotent like every NodeDriver: the same layout again is a no-op on the agent.
#pragma once

#include <chrono>

#include "server/nodes/node_driver.h"
#include "server/nodes/node_registry.h"

namespace carve::server::nodes {

class AgentNodeDriver final : public NodeDriver {
 public:
  explicit AgentNodeDriver(NodeRegistry& registry,
                           std::chrono::milliseconds carve_timeout = std::chrono::minutes(2))
      : registry_(registry), carve_timeout_(carve_timeout) {}

  Status CarveGpu(const NodeId& node, GpuIndex gpu, const core::Layout& layout) override;
  // CarveGpu with no instances: returns once the agent reports the GPU whole (it first stops
  // the copies no longer desired). Endpoint deletes use CarveNodes with an empty layout.
  Status ResetGpu(const NodeId& node, GpuIndex gpu) override;
  // One desired-state change per node (all its GPUs), then one wait on every node's reports.
  Status CarveNodes(const std::vector<NodeId>& nodes, int gpus, const core::Layout& layout,
                    const std::atomic<bool>& abort) override;

 private:
  NodeRegistry& registry_;
  const std::chrono::milliseconds carve_timeout_;
};

// The desired-state entry for one GPU carved as `layout` (no instances: whole).
protocol::GpuDesired GpuDesiredFor(GpuIndex gpu, const core::Layout& layout);

}  // namespace carve::server::nodes
