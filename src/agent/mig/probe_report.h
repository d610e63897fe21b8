// The JSON the read-only GPU probe prints: discovery, the live profile table, placements and
// the catalog cross-check of one node. Field names are stable (tests/gpu/run.sh reads them).
#pragma once

#include <nlohmann/json.hpp>

#include "agent/mig/discovery.h"

namespace carve::agent {

// {"status":"ok","driver_version":..., "gpus":[...], "differences":[...],
//  "summary":{"gpus":N,"differences":N,"placement_differences":N}}
nlohmann::json ProbeReport(const NodeInventory& node);

// {"status":"skipped","reason":...}: no NVML on this host.
nlohmann::json SkippedReport(const std::string& reason);

}  // namespace carve::agent
