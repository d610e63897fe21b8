#include "core/fleet_builders.h"

#include <fmt/format.h>

#include "catalog/catalog.h"

namespace carve::core {

Result<NodeSpec> NodeFromInstanceType(std::string name, std::string_view instance_type,
                                      GpuMode mode, const Layout& layout) {
  CARVE_ASSIGN_OR_RETURN(const catalog::InstanceType* type,
                         catalog::FindInstanceType(instance_type));
  CARVE_ASSIGN_OR_RETURN(const catalog::GpuModel* gpu, catalog::FindGpu(type->gpu_id));
  if (mode == GpuMode::kMig) {
    if (layout.instances.empty()) {
      return InvalidArgument(
          fmt::format("node '{}': a MIG node of {} needs a layout", name, type->id));
    }
    if (layout.gpu != nullptr && layout.gpu != gpu) {
      return InvalidArgument(fmt::format("node '{}': {} carries {} GPUs, the layout is for {}",
                                         name, type->id, gpu->id, layout.gpu->id));
    }
  } else if (!layout.instances.empty()) {
    return InvalidArgument(
        fmt::format("node '{}': a layout is only for MIG nodes, not {}", name, GpuModeName(mode)));
  }
  NodeSpec node;
  node.name = std::move(name);
  node.instance_type = std::string(type->id);
  node.cpu_milli = int64_t{type->vcpus} * 1000;
  node.host_memory_mib = type->memory_mib;
  for (int i = 0; i < type->gpu_count; ++i) {
    GpuSpec g;
    g.model = gpu;
    g.mode = mode;
    if (mode == GpuMode::kMig) {
      g.layout = layout;
      g.layout.gpu = gpu;
    }
    node.gpus.push_back(std::move(g));
  }
  return node;
}

}  // namespace carve::core
