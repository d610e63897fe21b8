#include "server/sagemaker/copy_record.h"

#include "server/nodes/allocation_json.h"

namespace carve::server::sagemaker {

using nlohmann::json;

json CopyRecord::ToJson() const {
  return {{"InferenceComponentName", component},
          {"CopyId", id},
          {"CopyIndex", index},
          {"Placement", nodes::AllocationToJson(placement, /*with_id=*/false)},
          {"SpecificationVersion", spec_version}};
}

Result<CopyRecord> CopyRecord::FromRecord(const store::Record& record) {
  try {
    json j = json::parse(record.body);
    CopyRecord c;
    c.component = j.at("InferenceComponentName").get<std::string>();
    c.id = j.at("CopyId").get<std::string>();
    c.index = j.at("CopyIndex").get<int>();
    auto placement = nodes::AllocationFromJson(j.at("Placement"));
    if (!placement.has_value()) {
      return Internal("stored copy '" + record.key.name + "': " + placement.error().message);
    }
    c.placement = std::move(placement).value();
    c.spec_version = j.value("SpecificationVersion", int64_t{1});  // Absent before deployments.
    return c;
  } catch (const json::exception& e) {
    return Internal("stored copy '" + record.key.name + "' is malformed: " + e.what());
  }
}

}  // namespace carve::server::sagemaker
