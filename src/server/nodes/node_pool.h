// NodePool: the capacity of the nodes one owner holds (an endpoint variant's instances, or a
// queue's nodes), as one core::PlacementEngine over them. It is the single capacity model of the
// control plane: SageMaker copies and queue tasks are placed through it, with the engine's one
// meaning of SPREAD and BINPACK, host CPU in thousandths of a vCPU, and allocations named by
// node, GPU index, profile and start.
//
// A pool is built from the nodes' instance types with every GPU in one mode (an endpoint variant
// carves every GPU the same way; an mGPU queue shares every card). When the owner's node set
// changes the owner builds a new pool and restores its allocations into it.
// Not thread-safe: the owner serialises calls.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/placement.h"
#include "server/nodes/node_claims.h"

namespace carve::server::nodes {

struct PoolNode {
  std::string name;
  std::string instance_type;
  friend bool operator==(const PoolNode&, const PoolNode&) = default;
};

struct PoolOptions {
  core::GpuMode mode = core::GpuMode::kWhole;
  core::Layout layout;           // kMig: every GPU's carve, from the layout engine.
  int64_t mgpu_reserve_mib = 0;  // kMgpu: card memory no share may take.
};

// One copy's placement, or why none fits (a value, not an error).
struct PoolPlacement {
  std::optional<core::AllocationRecord> allocation;
  std::string reason;
};

// The placement engine's fragmentation metric for one request shape on one owner's pool.
struct ShapeFragmentation {
  Owner scope;
  core::Request request;
  std::string description;  // core::ResolvedRequest::description.
  core::FragmentationReport report;
};

class NodePool {
 public:
  // NotFound for an instance type the catalog does not know; InvalidArgument as
  // core::PlacementEngine::Create (a layout for another GPU, a card too small for the reserve).
  static Result<NodePool> Create(std::vector<PoolNode> nodes, PoolOptions options);

  // Places one copy. InvalidArgument / NotFound for a request the pool can never serve (an
  // invalid share, a profile none of its GPUs carries).
  Result<PoolPlacement> PlaceOne(const core::Request& request, core::Strategy strategy);
  // Frees an allocation; an id that is not live is ignored (it was freed already).
  void Release(core::AllocationId id);
  // Re-applies a persisted allocation with its own id (core::PlacementEngine::Restore).
  Status Restore(const core::AllocationRecord& allocation);
  // Re-applies a persisted allocation under a fresh id, for records that keep no engine id.
  Result<core::AllocationId> Adopt(const core::AllocationRecord& allocation);

  // A node that is not Ready gets nothing new; what it holds stays until released. Unknown
  // names are ignored.
  void SetReady(const std::string& node, bool ready);
  bool Ready(const std::string& node) const;

  // The free capacity of the request's kind, and the part no copy of it can use. The errors are
  // PlaceOne's for a request the pool can never serve.
  Result<ShapeFragmentation> Fragmentation(const Owner& scope, const core::Request& request) const;

  const std::vector<PoolNode>& nodes() const { return nodes_; }
  const PoolOptions& options() const { return options_; }
  const core::PlacementEngine& engine() const { return engine_; }

 private:
  NodePool(std::vector<PoolNode> nodes, PoolOptions options, core::PlacementEngine engine)
      : nodes_(std::move(nodes)), options_(std::move(options)), engine_(std::move(engine)) {}

  std::vector<PoolNode> nodes_;
  PoolOptions options_;
  core::PlacementEngine engine_;
};

}  // namespace carve::server::nodes
