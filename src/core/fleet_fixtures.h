// Small fleets for placement tests and benchmarks, built from the real catalog rows.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "catalog/catalog.h"
#include "core/fleet.h"

namespace carve::core::fixtures {

inline const catalog::GpuModel* Gpu(std::string_view id) { return catalog::FindGpu(id).value(); }

// A hand-placed layout (tests name the starts; the layout engine is not involved).
inline Layout LayoutOf(std::string_view gpu_id,
                       const std::vector<std::pair<std::string_view, int>>& profile_at_start) {
  Layout l;
  l.gpu = Gpu(gpu_id);
  for (auto [name, start] : profile_at_start) {
    l.instances.push_back({catalog::FindProfile(*l.gpu, name).value(), start});
  }
  return l;
}

// The seed's A100-40GB layout: 4g.20gb@0, 2g.10gb@4, 1g.5gb@6.
inline Layout SeedA100Layout() {
  return LayoutOf("a100-40gb", {{"4g.20gb", 0}, {"2g.10gb", 4}, {"1g.5gb", 6}});
}

inline NodeSpec Node(std::string name, int vcpus, int64_t host_memory_mib,
                     std::vector<GpuSpec> gpus) {
  NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = int64_t{vcpus} * 1000;
  n.host_memory_mib = host_memory_mib;
  n.gpus = std::move(gpus);
  return n;
}

inline std::vector<GpuSpec> Cards(int count, std::string_view gpu_id, GpuMode mode,
                                  const Layout& layout = {}) {
  std::vector<GpuSpec> out(static_cast<size_t>(count));
  for (GpuSpec& g : out) {
    g.model = Gpu(gpu_id);
    g.mode = mode;
    g.layout = layout;
  }
  return out;
}

}  // namespace carve::core::fixtures
