#include "server/sagemaker/component_record.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <iterator>

#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {

using nlohmann::json;

core::Request ComponentRecord::CopyRequest() const {
  return partition_type.empty() ? core::Request::WholeGpus(devices, cpu_milli, memory_mib)
                                : core::Request::Partition(partition_type, cpu_milli, memory_mib);
}

CopySpec ComponentRecord::Current() const {
  return {spec_version, specification, devices, cpu_milli, memory_mib, strategy};
}

void ComponentRecord::Apply(const CopySpec& spec) {
  spec_version = spec.version;
  specification = spec.specification;
  devices = spec.devices;
  cpu_milli = spec.cpu_milli;
  memory_mib = spec.memory_mib;
  strategy = spec.strategy;
}

const json* ComponentRecord::SpecificationOf(int64_t version) const {
  if (version == spec_version) return &specification;
  if (deployment && deployment->from.version == version) return &deployment->from.specification;
  return nullptr;
}

void ComponentRecord::KeepModelContainer(int64_t version, const std::string& model_body) {
  for (auto it = model_containers.begin(); it != model_containers.end();) {
    int64_t kept = 0;
    const bool runnable = std::from_chars(it.key().data(), it.key().data() + it.key().size(),
                                          kept)
                              .ec == std::errc{} &&
                          kept != version && SpecificationOf(kept) != nullptr;
    it = runnable ? std::next(it) : model_containers.erase(it);
  }
  const json model = json::parse(model_body, nullptr, false);
  if (const json* container = ServingContainer(model)) {
    model_containers[std::to_string(version)] = *container;
  }
}

const json* ServingContainer(const json& model) {
  if (!model.is_object()) return nullptr;
  if (auto it = model.find("PrimaryContainer"); it != model.end()) return &*it;
  auto all = model.find("Containers");
  return all != model.end() && all->is_array() && !all->empty() ? &all->front() : nullptr;
}

const json* ComponentRecord::ModelContainerOf(int64_t version) const {
  auto it = model_containers.find(std::to_string(version));
  return it == model_containers.end() ? nullptr : &*it;
}

std::string ComponentRecord::ModelName() const {
  auto it = specification.find("ModelName");
  return it != specification.end() && it->is_string() ? it->get<std::string>() : "";
}

json ComponentRecord::ToJson() const {
  json j = {{"InferenceComponentName", name},
            {"EndpointName", endpoint},
            {"VariantName", variant},
            {"Specification", specification},
            {"PartitionType", partition_type},
            {"Devices", devices},
            {"CpuMilli", cpu_milli},
            {"MemoryMib", memory_mib},
            {"Strategy", core::StrategyName(strategy)},
            {"DesiredCopyCount", desired},
            {"RunningCopyCount", running},
            {"InferenceComponentStatus", Name(status)},
            {"StatusMessage", status_message},
            {"FailureReason", failure_reason},
            {"EverInService", ever_in_service},
            {"Tags", tags},
            {"SpecificationVersion", spec_version}};
  if (deployment) j["Deployment"] = deployment->ToJson();
  if (!last_deployment_config.is_null()) j["LastDeploymentConfig"] = last_deployment_config;
  if (!model_containers.empty()) j["ModelContainers"] = model_containers;
  return j;
}

namespace {

V1CopyPlacement V1FromJson(const json& j) {
  V1CopyPlacement p;
  p.node = j.at("node").get<std::string>();
  for (const auto& s : j.at("slots")) p.slots.emplace_back(s.at(0).get<int>(), s.at(1).get<int>());
  p.cpu_milli = j.at("cpu_milli").get<int64_t>();
  p.memory_mib = j.at("memory_mib").get<int64_t>();
  p.index = j.value("index", 0);
  // Records written before copy ids existed: the id that version derived from the first slot.
  p.id = j.contains("id") ? j.at("id").get<std::string>()
                          : p.node + "-g" + std::to_string(p.slots.empty() ? 0 : p.slots[0].first) +
                                "s" + std::to_string(p.slots.empty() ? 0 : p.slots[0].second);
  return p;
}

}  // namespace

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
    CARVE_ASSIGN_OR_RETURN(c.strategy, core::ParseStrategy(j.at("Strategy").get<std::string>()));
    c.desired = j.at("DesiredCopyCount").get<int>();
    if (j.contains("Copies")) {
      for (const auto& p : j.at("Copies")) c.v1_copies.push_back(V1FromJson(p));
    }
    c.running = j.value("RunningCopyCount", 0);
    CARVE_ASSIGN_OR_RETURN(
        c.status, ParseComponentStatus(j.at("InferenceComponentStatus").get<std::string>()));
    c.status_message = j.value("StatusMessage", "");
    c.failure_reason = j.value("FailureReason", "");
    c.ever_in_service = j.value("EverInService", false);
    c.tags = j.value("Tags", json::array());
    c.spec_version = j.value("SpecificationVersion", int64_t{1});
    if (j.contains("Deployment")) {
      CARVE_ASSIGN_OR_RETURN(Deployment d, Deployment::FromJson(j.at("Deployment")));
      c.deployment = std::move(d);
    }
    if (j.contains("LastDeploymentConfig")) c.last_deployment_config = j["LastDeploymentConfig"];
    if (j.contains("ModelContainers") && j["ModelContainers"].is_object()) {
      c.model_containers = j["ModelContainers"];
    }
    return c;
  } catch (const json::exception& e) {
    return Internal("stored inference component '" + record.key.name +
                    "' is malformed: " + e.what());
  }
}

Status MigrateModelContainers(store::Store& store, std::vector<ComponentEntry>& components) {
  for (ComponentEntry& e : components) {
    ComponentRecord& c = e.component;
    std::vector<int64_t> versions{c.spec_version};
    if (c.deployment) versions.push_back(c.deployment->from.version);
    bool kept = false;
    for (int64_t version : versions) {
      const json* spec = c.SpecificationOf(version);
      if (spec == nullptr || c.ModelContainerOf(version) != nullptr) continue;
      const auto model = spec->find("ModelName");
      if (model == spec->end() || !model->is_string()) continue;
      auto rec = store.Get({e.record.key.account, std::string(kModel), model->get<std::string>()});
      if (!rec.has_value()) {
        spdlog::warn(
            "component {}/{}: specification version {} names model {}, which is gone: "
            "its copies cannot be started again ({})",
            e.record.key.account, c.name, version, model->get<std::string>(), rec.error().message);
        continue;
      }
      c.KeepModelContainer(version, rec->body);
      kept = true;
    }
    if (!kept) continue;
    CARVE_ASSIGN_OR_RETURN(e.record,
                           store.Update(e.record.key, c.ToJson().dump(), e.record.version));
  }
  return OkStatus();
}

}  // namespace carve::server::sagemaker
