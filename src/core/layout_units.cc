#include "core/layout_units.h"

#include <set>

namespace carve::core {

UnitUse UnitsOf(const catalog::GpuModel& gpu, const Layout& layout) {
  UnitUse out;
  out.placement_units = gpu.placement_units;
  std::vector<bool> covered(static_cast<size_t>(gpu.placement_units), false);
  std::set<const catalog::MigProfile*> profiles;
  for (const PlacedInstance& inst : layout.instances) {
    profiles.insert(inst.profile);
    for (int u = inst.start; u < inst.end() && u < gpu.placement_units; ++u) covered[u] = true;
  }
  std::vector<bool> usable(covered.size(), false);
  for (const catalog::MigProfile* p : profiles) {
    for (uint8_t start : p->starts) {
      const int end = start + p->placement_size;
      if (end > gpu.placement_units) continue;
      bool fits = true;
      for (int u = start; u < end && fits; ++u) fits = !covered[u];
      if (!fits) continue;
      for (int u = start; u < end; ++u) usable[u] = true;
    }
  }
  for (int u = 0; u < gpu.placement_units; ++u) {
    if (covered[u]) continue;
    out.free.push_back(u);
    if (!usable[u]) out.stranded.push_back(u);
  }
  return out;
}

}  // namespace carve::core
