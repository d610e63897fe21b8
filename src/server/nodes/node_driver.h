// NodeDriver: the control plane's handle on a node's GPUs. AgentNodeDriver carves through each
// node's agent (NVML on the host); the services' unit tests use the simulated one in testing/.
//
// Contract: calls block until the GPU is in the requested state. Carve is idempotent (carving
// the layout a GPU already has succeeds), so a reconciler that restarts mid-carve just carves
// again. Errors: NotFound (no such node or GPU), Unavailable (the node did not answer; retry),
// Internal (the driver failed; the GPU's state is unknown and the caller should reset it).
// Implementations are thread-safe.
#pragma once

#include <atomic>
#include <vector>

#include "common/ids.h"
#include "common/result.h"
#include "core/layout.h"

namespace carve::server::nodes {

class NodeDriver {
 public:
  virtual ~NodeDriver() = default;
  // Carves GPU `gpu` of `node` into `layout` (replacing whatever it had). A layout with no
  // instances means MIG disabled: the GPU is used whole.
  virtual Status CarveGpu(const NodeId& node, GpuIndex gpu, const core::Layout& layout) = 0;
  // Destroys every partition on the GPU and leaves it whole.
  virtual Status ResetGpu(const NodeId& node, GpuIndex gpu) = 0;
  // Carves GPUs 0..gpus-1 of every node in `nodes` into `layout`. OK once all are carved;
  // otherwise the first failure, "carving GPU G of NODE failed: ...". `abort` ends the wait
  // early (Unavailable). This default runs CarveGpu GPU by GPU, one thread per node;
  // AgentNodeDriver sets each node's GPUs in one desired-state change and waits on all the
  // nodes with one waiter, which is what holds at thousands of nodes.
  virtual Status CarveNodes(const std::vector<NodeId>& nodes, int gpus, const core::Layout& layout,
                            const std::atomic<bool>& abort);
};

}  // namespace carve::server::nodes
