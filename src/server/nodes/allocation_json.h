// The persisted form of a core::AllocationRecord, shared by every owner's records (inference-
// component copies, queue tasks): a partition is named by node, GPU index, profile and start,
// never by a position in some list, so a record means the same partition whatever else changes.
//
//   {"node": "p4d-0", "kind": "partition", "gpus": [3], "profile": "1g.5gb", "start": 6,
//    "cpu_milli": 1000, "host_memory_mib": 1024}
//   {"node": "g5-0", "kind": "share", "gpus": [0], "core_percent": 30, "memory_mib": 1000,
//    "id": 16777217}
// "id" (the engine's allocation id) is written only when asked for; owners that rebuild their
// pools adopt records under fresh ids instead.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "core/placement.h"

namespace carve::server::nodes {

nlohmann::json AllocationToJson(const core::AllocationRecord& a, bool with_id);
// InvalidArgument naming the field when the JSON is not an allocation. Also reads the queue
// records' earlier form ({"whole": bool} instead of "kind").
Result<core::AllocationRecord> AllocationFromJson(const nlohmann::json& j);

}  // namespace carve::server::nodes
