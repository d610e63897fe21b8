// Validating a MIG layout (a multiset of profile names) for one GPU, and what a layout yields
// on a SageMaker instance type, whose every GPU is carved the same way.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "catalog/gpu_model.h"
#include "catalog/instance_type.h"
#include "common/result.h"
#include "core/layout.h"
#include "core/layout_rules.h"

namespace carve::core {

// Resolves names on this GPU; both "mig-3g.40gb" and "3g.40gb" work, because names mean
// different geometry on different GPUs. NotFound lists every unknown name and what the GPU has.
Result<std::vector<const catalog::MigProfile*>> ResolveProfiles(const catalog::GpuModel& gpu,
                                                                std::span<const std::string> names);

// Validates a layout and gives each instance a concrete, non-overlapping start.
//
// Checks, in this order: the GPU has MIG and placement data; each name resolves on this GPU;
// SageMaker rules (when options.sagemaker_rules); driver rules (when options.driver); per-profile
// caps; at most one +me; +me.all only beside -me profiles; instance count; compute- and
// memory-slice sums; then a placement search (layout_search.h). Every rule the layout breaks is
// reported, one sentence per line of the error message, each saying what the GPU provides,
// what the layout requests and the rule's name.
//
// Errors: NotFound (unknown profile), FailedPrecondition (driver rules; GPU without MIG or
// without placement data), InvalidArgument (every other rule). The returned Layout lists the
// instances in creation order (SortForCreation).
Result<Layout> ValidateLayout(const catalog::GpuModel& gpu, std::span<const std::string> names,
                              const LayoutOptions& options = {});
// The same for profiles already resolved on `gpu`.
Result<Layout> ValidateProfiles(const catalog::GpuModel& gpu,
                                std::span<const catalog::MigProfile* const> profiles,
                                const LayoutOptions& options = {});

// A layout as the layout engine placed it and a record persisted it: (profile, start) pairs in
// creation order. Each name is resolved on `gpu`, each start must be one the profile allows,
// and no two instances may overlap; no other rule is checked again (the layout was validated
// when it was first placed). NotFound names an unknown profile; InvalidArgument a start the
// profile does not allow, or an overlap.
Result<Layout> LayoutAt(const catalog::GpuModel& gpu,
                        std::span<const std::pair<std::string, int>> placements);

// What one instance type yields when every GPU on it is carved with `layout` (SageMaker applies
// one layout uniformly: the seed's ml.p4d.24xlarge carved [mig-4g.20gb, mig-2g.10gb,
// mig-1g.5gb] yields 24 partitions, 8 of each).
struct InstancePartitions {
  struct Count {
    const catalog::MigProfile* profile = nullptr;
    int per_gpu = 0;
    int per_instance = 0;  // per_gpu x gpu_count.
  };
  int gpu_count = 0;
  std::vector<Count> counts;  // One row per distinct profile, in layout order.
  int total = 0;              // Partitions on the whole instance.
};

// InvalidArgument when the instance type carries a GPU other than layout.gpu.
Result<InstancePartitions> PartitionsPerInstance(const catalog::InstanceType& type,
                                                 const Layout& layout);

}  // namespace carve::core
