// Layout: a set of MIG GPU instances placed on one GPU, the currency between the layout engine,
// the placement engine, the control plane and the agent.
#pragma once

#include <vector>

#include "catalog/gpu_model.h"

namespace carve::core {

// One GPU instance at a concrete placement: it occupies placement units
// [start, start + profile->placement_size).
struct PlacedInstance {
  const catalog::MigProfile* profile = nullptr;
  int start = 0;

  int end() const { return start + profile->placement_size; }
  friend bool operator==(const PlacedInstance&, const PlacedInstance&) = default;
};

// A concrete carve of one GPU. Instances are kept in creation order: the agent creates them in
// this order and destroys them in reverse.
struct Layout {
  const catalog::GpuModel* gpu = nullptr;
  std::vector<PlacedInstance> instances;
};

}  // namespace carve::core
