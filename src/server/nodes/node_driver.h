// NodeDriver: the control plane's handle on a node's GPUs. The simulated driver stands in for
// real nodes; the agent issue adds one backed by NVML on each host.
//
// Contract: calls block until the GPU is in the requested state. Carve is idempotent (carving
// the layout a GPU already has succeeds), so a reconciler that restarts mid-carve just carves
// again. Errors: NotFound (no such node or GPU), Unavailable (the node did not answer; retry),
// Internal (the driver failed; the GPU's state is unknown and the caller should reset it).
// Implementations are thread-safe.
#pragma once

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
};

}  // namespace carve::server::nodes
