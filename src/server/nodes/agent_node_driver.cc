#include "server/nodes/agent_node_driver.h"

namespace carve::server::nodes {

protocol::GpuDesired GpuDesiredFor(GpuIndex gpu, const core::Layout& layout) {
  protocol::GpuDesired d;
  d.index = static_cast<int>(gpu.value());
  d.mig = !layout.instances.empty();
  for (const auto& inst : layout.instances) {
    d.partitions.push_back({std::string(inst.profile->name), inst.start});
  }
  return d;
}

Status AgentNodeDriver::CarveGpu(const NodeId& node, GpuIndex gpu, const core::Layout& layout) {
  registry_.SetGpuLayout(node, GpuDesiredFor(gpu, layout));
  return registry_.WaitForGpu(node, static_cast<int>(gpu.value()), carve_timeout_);
}

Status AgentNodeDriver::CarveNodes(const std::vector<NodeId>& nodes, int gpus,
                                   const core::Layout& layout, const std::atomic<bool>& abort) {
  std::vector<protocol::GpuDesired> want;
  for (int g = 0; g < gpus; ++g) {
    want.push_back(GpuDesiredFor(GpuIndex(static_cast<uint32_t>(g)), layout));
  }
  for (const NodeId& node : nodes) registry_.SetGpuLayouts(node, want);
  return registry_.WaitForNodes(nodes, carve_timeout_, &abort);
}

Status AgentNodeDriver::ResetGpu(const NodeId& node, GpuIndex gpu) {
  return CarveGpu(node, gpu, core::Layout{});
}

}  // namespace carve::server::nodes
