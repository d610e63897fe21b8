// Which placement units of a carved GPU no partition covers, and which of those no profile of
// its layout could ever use ("stranded"): what the dashboard draws beside each partition, and a
// measure of a layout's waste.
//
// Example: A100-40GB carved [4g.20gb@0, 2g.10gb@4, 1g.5gb@6] covers units 0..6. Unit 7 is free,
// and stranded: the smallest profile of the layout, 1g.5gb, may start only at 0..6.
#pragma once

#include <vector>

#include "catalog/gpu_model.h"
#include "core/layout.h"

namespace carve::core {

struct UnitUse {
  int placement_units = 0;
  std::vector<int> free;      // Units no instance of the layout covers, ascending.
  std::vector<int> stranded;  // Free units that no profile of the layout can cover at any of its
                              // allowed starts within the free units, ascending.
};

// `layout.gpu` may be null; `gpu` is the GPU it is carved on.
UnitUse UnitsOf(const catalog::GpuModel& gpu, const Layout& layout);

}  // namespace carve::core
