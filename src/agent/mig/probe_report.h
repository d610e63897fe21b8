// The JSON the read-only GPU probe prints: discovery, the live profile table, placements and
// the catalog cross-check of one node. Field names are stable (tests/gpu/run.sh reads them).
#pragma once

#include <nlohmann/json.hpp>

#include "agent/mig/discovery.h"

namespace carve::agent {

// {"status":"ok","driver_version":..., "gpus":[...], "differences":[...],
//  "summary":{"gpus":N,"differences":N,"placement_differences":N,"profiles_compared":N}}
// Each GPU says how many profiles were compared with the catalog ("profiles_compared") and, when
// none could be, why ("profiles_unread"): no differences after comparing nothing is no match.
nlohmann::json ProbeReport(const NodeInventory& node);

// {"status":"skipped","reason":...}: no NVML on this host.
nlohmann::json SkippedReport(const std::string& reason);

// {"status":"error","reason":...}: an NVML that is there but unusable (a missing entry point).
nlohmann::json ErrorReport(const std::string& reason);

// The read-only queries the agent relies on, one row per GPU, each an answer or {"error":...}:
// [{"gpu":0,"gpu_instances":[...],"mig_devices":[...],"compute_processes":[...],
//   "utilization":{"gpu_percent":..,"memory_percent":..}}]
nlohmann::json ReadOnlyCallsReport(Nvml& nvml, uint32_t gpu_count);

}  // namespace carve::agent
