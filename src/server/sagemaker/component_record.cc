#include "server/sagemaker/component_record.h"

namespace carve::server::sagemaker {

using nlohmann::json;

json ComponentRecord::ToJson() const {
  json copies_json = json::array();
  for (const auto& c : copies) copies_json.push_back(fleet::PlacementToJson(c));
  return {{"InferenceComponentName", name},
          {"EndpointName", endpoint},
          {"VariantName", variant},
          {"Specification", specification},
          {"PartitionType", partition_type},
          {"Devices", devices},
          {"CpuMilli", cpu_milli},
          {"MemoryMib", memory_mib},
          {"Strategy", strategy == fleet::PlacementStrategy::kSpread ? "SPREAD" : "BINPACK"},
          {"DesiredCopyCount", desired},
          {"Copies", copies_json},
          {"RunningCopyCount", running},
          {"InferenceComponentStatus", status},
          {"StatusMessage", status_message},
          {"FailureReason", failure_reason},
          {"EverInService", ever_in_service},
          {"Tags", tags}};
}

Result<ComponentRecord> ComponentRecord::FromRecord(const store::Record& record) {
  try {
    json j = json::parse(record.body);
    ComponentRecord c;
    c.name = j.at("InferenceComponentName").get<std::string>();
    c.endpoint = j.at("EndpointName").get<std::string>();
    c.variant = j.at("VariantName").get<std::string>();
    c.specification = j.at("Specification");
    c.partition_type = j.at("PartitionType").get<std::string>();
    c.devices = j.at("Devices").get<int>();
    c.cpu_milli = j.at("CpuMilli").get<int64_t>();
    c.memory_mib = j.at("MemoryMib").get<int64_t>();
    c.strategy = j.at("Strategy").get<std::string>() == "BINPACK"
                     ? fleet::PlacementStrategy::kBinpack
                     : fleet::PlacementStrategy::kSpread;
    c.desired = j.at("DesiredCopyCount").get<int>();
    for (const auto& p : j.at("Copies")) {
      CARVE_ASSIGN_OR_RETURN(fleet::CopyPlacement placement, fleet::PlacementFromJson(p));
      c.copies.push_back(std::move(placement));
    }
    c.running = j.value("RunningCopyCount", static_cast<int>(c.copies.size()));
    c.status = j.at("InferenceComponentStatus").get<std::string>();
    c.status_message = j.value("StatusMessage", "");
    c.failure_reason = j.value("FailureReason", "");
    c.ever_in_service = j.value("EverInService", false);
    c.tags = j.value("Tags", json::array());
    return c;
  } catch (const json::exception& e) {
    return Internal("stored inference component '" + record.key.name +
                    "' is malformed: " + e.what());
  }
}

}  // namespace carve::server::sagemaker
