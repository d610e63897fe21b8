// Node specs from the catalog's instance types, for a control plane that provisions by instance
// type and for tests and benchmarks.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "core/fleet.h"

namespace carve::core {

// A node of `instance_type` (its GPU model, GPU count, vCPUs and host memory) whose GPUs all use
// `mode`. For kMig every GPU gets `layout` (SageMaker applies one layout uniformly); the layout
// must come from the layout engine, it is not validated here.
// NotFound for an unknown instance type; InvalidArgument for a kMig node without a layout, a
// layout for another GPU model, or a layout on a non-kMig node.
Result<NodeSpec> NodeFromInstanceType(std::string name, std::string_view instance_type,
                                      GpuMode mode, const Layout& layout = {});

}  // namespace carve::core
