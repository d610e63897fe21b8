#include "server/sagemaker/endpoint_record.h"

#include <fmt/format.h>

#include <algorithm>

namespace carve::server::sagemaker {

using nlohmann::json;

json EndpointRecord::ToJson() const {
  json vars = json::array();
  for (const auto& v : variants) vars.push_back(VariantToJson(v));
  return {{"EndpointName", name},
          {"EndpointConfigName", config_name},
          {"EndpointStatus", Name(status)},
          {"FailureReason", failure_reason},
          {"Variants", vars},
          {"Tags", tags},
          {"StatusSinceMs", status_since_ms}};
}

Result<EndpointRecord> EndpointRecord::FromRecord(const store::Record& record) {
  try {
    json j = json::parse(record.body);
    EndpointRecord ep;
    ep.name = j.at("EndpointName").get<std::string>();
    ep.config_name = j.at("EndpointConfigName").get<std::string>();
    CARVE_ASSIGN_OR_RETURN(ep.status,
                           ParseEndpointStatus(j.at("EndpointStatus").get<std::string>()));
    ep.failure_reason = j.value("FailureReason", "");
    for (const auto& v : j.at("Variants")) {
      CARVE_ASSIGN_OR_RETURN(VariantSpec spec, VariantFromJson(v));
      ep.variants.push_back(std::move(spec));
    }
    ep.tags = j.value("Tags", json::array());
    ep.status_since_ms = j.value("StatusSinceMs", int64_t{0});
    return ep;
  } catch (const json::exception& e) {
    return Internal("stored endpoint '" + record.key.name + "' is malformed: " + e.what());
  }
}

Status MigrateEndpoints(store::Store& store, std::vector<EndpointEntry>& endpoints) {
  for (auto& e : endpoints) {
    bool stale = false;
    for (const auto& v : e.endpoint.variants) stale = stale || v.layout_recomputed;
    if (!stale) continue;
    for (auto& v : e.endpoint.variants) v.layout_recomputed = false;
    CARVE_ASSIGN_OR_RETURN(
        e.record, store.Update(e.record.key, e.endpoint.ToJson().dump(), e.record.version));
  }
  return OkStatus();
}

std::string JoinNodes(const std::vector<std::string>& names) {
  std::string out;
  const size_t shown = std::min(names.size(), kJoinedNodes);
  for (size_t i = 0; i < shown; ++i) out += (i == 0 ? "" : ", ") + names[i];
  if (shown < names.size()) out += fmt::format(" and {} more", names.size() - shown);
  return out;
}

}  // namespace carve::server::sagemaker
