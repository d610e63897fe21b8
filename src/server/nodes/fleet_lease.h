// FleetLease: how services other than the SageMaker one (mGPU queues) take whole nodes from the
// fleet for their lifetime. The SageMaker service owns the Fleet and implements this, so an
// endpoint and a queue can never claim the same node.
//
// Owners are strings such as "queue/<account>/<name>". Claims are all-or-none and persist only
// in the caller's own records: after a restart the caller re-claims with ClaimSpecific.
// Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/result.h"

namespace carve::server::nodes {

struct LeasedNode {
  NodeId id;
  std::string instance_type;  // "ml.g5.12xlarge"
  std::string gpu_model;      // catalog id, "a10g"
  int gpu_count = 0;
  int64_t gpu_memory_mib = 0;  // per GPU
  bool ready = false;          // its agent reports (NodeRegistry readiness)
};

class FleetLease {
 public:
  virtual ~FleetLease() = default;
  // Claims `count` free nodes of `instance_type`. ResourceExhausted naming what is missing
  // ("needs 2 x ml.g5.12xlarge; the fleet has 2, 1 free"); InvalidArgument for an unknown type.
  virtual Result<std::vector<NodeId>> Claim(const std::string& owner,
                                            std::string_view instance_type, int count) = 0;
  // Claims exactly these nodes (by name, or after a restart). NotFound / FailedPrecondition
  // (held by another owner). All or none.
  virtual Status ClaimSpecific(const std::string& owner, const std::vector<NodeId>& nodes) = 0;
  virtual void Release(const std::string& owner) = 0;
  virtual std::vector<LeasedNode> NodesOf(const std::string& owner) const = 0;
  // Every node in the fleet, claimed or not (for listing and for error messages).
  virtual std::vector<LeasedNode> AllNodes() const = 0;
};

}  // namespace carve::server::nodes
