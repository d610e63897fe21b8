// GET /v1/catalog: the catalog figures the dashboard needs and the fleet JSON does not carry:
// instance types with their on-demand price, and GPU models with their MIG geometry and each
// profile's share of the GPU for pricing (max(compute fraction, memory fraction), the
// planner's GpuShare). The same data `carve instance-types` and `carve profiles` print.
//
//   {"instance_types": [{"id": "ml.p4d.24xlarge", "gpu": "a100-40gb", "gpu_count": 8,
//                        "vcpus": 96, "memory_mib": 1179648, "usd_per_hour": 37.69,
//                        "price_source": "..."}],
//    "gpus": [{"id": "a100-40gb", "display_name": "A100-SXM4-40GB", "memory_mib": 40960,
//              "compute_slices": 7, "memory_slices": 8, "placement_units": 8,
//              "profiles": [{"name": "4g.20gb", "sagemaker_name": "mig-4g.20gb",
//                            "compute_slices": 4, "memory_slices": 4, "memory_mib": 19968,
//                            "placement_size": 4, "starts": [0], "max_count": 1,
//                            "gpu_share": 0.571}]}]}
#pragma once

#include <nlohmann/json.hpp>

#include "catalog/catalog.h"

namespace carve::server::ui {

// Prices honour `overrides` (a config's prices:), like every other price carve quotes.
nlohmann::json CatalogJson(const catalog::PriceOverrides& overrides = {});

}  // namespace carve::server::ui
