// Enumerating every maximal MIG layout of a GPU, with placements.
//
// A layout is maximal when no allowed profile can be added at any start without breaking a
// rule (layout_rules.h) or overlapping. Two layouts are the same when they hold the same
// profiles at the same starts; each is listed once. Worked example: A100-40GB restricted to
// 1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb and 7g.40gb has 19 maximal layouts from driver R510 on and
// 18 before it (4g.20gb@0 + 3g.20gb@4 needs R510): the 19 rows of the MIG guide's A100 diagram.
#pragma once

#include <vector>

#include "catalog/gpu_model.h"
#include "common/result.h"
#include "core/layout.h"
#include "core/layout_rules.h"

namespace carve::core {

struct EnumerateOptions {
  // Profiles the layouts may use (of the same GPU); empty means every profile of the GPU.
  std::vector<const catalog::MigProfile*> profiles = {};
  // Driver and SageMaker rules; profiles they refuse are left out.
  LayoutOptions rules = {};
};

// Every maximal layout, instances in ascending start order; layouts ordered by their
// (start, catalog position) sequences. The empty layout is never listed (when nothing at all
// can be placed the list is empty). Errors: FailedPrecondition for a GPU without MIG or without
// placement data; InvalidArgument for a restricting profile of another GPU.
//
// Cost: depth-first over (profile, start) candidates in start order, so each layout is built
// once; a few thousand nodes on 8-unit GPUs and on the 12-unit RTX PRO 6000.
Result<std::vector<Layout>> EnumerateMaximalLayouts(const catalog::GpuModel& gpu,
                                                    const EnumerateOptions& options = {});

}  // namespace carve::core
