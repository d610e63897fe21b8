#include "server/nodes/node_pool.h"

#include "core/fleet_builders.h"

namespace carve::server::nodes {
namespace {

core::FleetOptions EngineOptions(const PoolOptions& o) {
  core::FleetOptions out;
  out.mgpu_reserved_memory_mib = o.mgpu_reserve_mib;
  return out;
}

}  // namespace

Result<NodePool> NodePool::Create(std::vector<PoolNode> nodes, PoolOptions options) {
  std::vector<core::NodeSpec> specs;
  specs.reserve(nodes.size());
  for (const auto& n : nodes) {
    CARVE_ASSIGN_OR_RETURN(
        core::NodeSpec spec,
        core::NodeFromInstanceType(
            n.name, n.instance_type, options.mode,
            options.mode == core::GpuMode::kMig ? options.layout : core::Layout{}));
    specs.push_back(std::move(spec));
  }
  CARVE_ASSIGN_OR_RETURN(core::PlacementEngine engine,
                         core::PlacementEngine::Create(std::move(specs), EngineOptions(options)));
  return NodePool(std::move(nodes), std::move(options), std::move(engine));
}

Result<PoolPlacement> NodePool::PlaceOne(const core::Request& request, core::Strategy strategy) {
  CARVE_ASSIGN_OR_RETURN(core::Placement placement, engine_.Place(request, 1, strategy));
  PoolPlacement out;
  if (!placement.placed()) {
    out.reason = std::move(placement.reason);
    return out;
  }
  CARVE_ASSIGN_OR_RETURN(core::AllocationRecord record,
                         engine_.Describe(placement.allocations.front()));
  out.allocation = std::move(record);
  return out;
}

Result<ShapeFragmentation> NodePool::Fragmentation(const Owner& scope,
                                                   const core::Request& request) const {
  CARVE_ASSIGN_OR_RETURN(core::ResolvedRequest resolved, engine_.Resolve(request));
  return ShapeFragmentation{scope, request, resolved.description, engine_.Fragmentation(resolved)};
}

void NodePool::Release(core::AllocationId id) { (void)engine_.Release(id); }

Status NodePool::Restore(const core::AllocationRecord& allocation) {
  return engine_.Restore(allocation);
}

Result<core::AllocationId> NodePool::Adopt(const core::AllocationRecord& allocation) {
  return engine_.Adopt(allocation);
}

void NodePool::SetReady(const std::string& node, bool ready) {
  (void)engine_.SetSchedulable(node, ready);  // NotFound: not one of ours, nothing to do.
}

bool NodePool::Ready(const std::string& node) const { return engine_.schedulable(node); }

}  // namespace carve::server::nodes
