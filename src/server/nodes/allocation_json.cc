#include "server/nodes/allocation_json.h"

#include <fmt/format.h>

#include "common/bounded_json.h"

namespace carve::server::nodes {
namespace {

using nlohmann::json;

std::string_view KindName(core::RequestKind k) {
  switch (k) {
    case core::RequestKind::kPartition:
      return "partition";
    case core::RequestKind::kWholeGpus:
      return "whole";
    case core::RequestKind::kShare:
      return "share";
  }
  return "share";
}

Result<core::RequestKind> ParseKind(const json& j) {
  if (!j.contains("kind")) {  // Queue records before the shared form: {"whole": bool}.
    return j.value("whole", false) ? core::RequestKind::kWholeGpus : core::RequestKind::kShare;
  }
  const std::string k = j.at("kind").get<std::string>();
  if (k == "partition") return core::RequestKind::kPartition;
  if (k == "whole") return core::RequestKind::kWholeGpus;
  if (k == "share") return core::RequestKind::kShare;
  return InvalidArgument(
      fmt::format("allocation kind '{}' is not one of [partition, whole, share]", k));
}

}  // namespace

json AllocationToJson(const core::AllocationRecord& a, bool with_id) {
  json j = {{"node", a.node}, {"kind", KindName(a.kind)}, {"gpus", a.gpu_indexes}};
  if (a.kind == core::RequestKind::kPartition) {
    j["profile"] = a.profile;
    j["start"] = a.partition_start;
  }
  if (a.kind == core::RequestKind::kShare) {
    j["core_percent"] = a.core_percent;
    j["memory_mib"] = a.memory_mib;
  }
  if (a.cpu_milli != 0) j["cpu_milli"] = a.cpu_milli;
  if (a.host_memory_mib != 0) j["host_memory_mib"] = a.host_memory_mib;
  if (with_id) j["id"] = a.id.value();
  return j;
}

Result<core::AllocationRecord> AllocationFromJson(const json& j) {
  try {
    core::AllocationRecord a;
    a.node = j.at("node").get<std::string>();
    CARVE_ASSIGN_OR_RETURN(a.kind, ParseKind(j));
    a.gpu_indexes = j.at("gpus").get<std::vector<int>>();
    if (a.kind == core::RequestKind::kPartition) {
      a.profile = j.at("profile").get<std::string>();
      a.partition_start = j.at("start").get<int>();
    }
    a.core_percent = j.value("core_percent", 0);
    a.memory_mib = j.value("memory_mib", int64_t{0});
    a.cpu_milli = j.value("cpu_milli", int64_t{0});
    a.host_memory_mib = j.value("host_memory_mib", int64_t{0});
    a.id = core::AllocationId(j.value("id", uint64_t{0}));
    return a;
  } catch (const json::exception& e) {
    return InvalidArgument(fmt::format("allocation {} is malformed: {}", JsonPreview(j), e.what()));
  }
}

}  // namespace carve::server::nodes
