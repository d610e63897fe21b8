#include "server/sagemaker/workload_publisher.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "server/nodes/agent_node_driver.h"
#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;

// The model's container as the copy runs it: the component's own Container wins over its
// model's PrimaryContainer (or first of Containers).
struct ContainerSpec {
  std::string image;
  std::string model_data;
  std::map<std::string, std::string> environment;
};

void ReadContainer(const json& c, ContainerSpec& out) {
  if (!c.is_object()) return;
  if (c.contains("Image") && c["Image"].is_string()) out.image = c["Image"];
  for (const char* key : {"ModelDataUrl", "ArtifactUrl"}) {
    if (c.contains(key) && c[key].is_string()) out.model_data = c[key];
  }
  if (c.contains("Environment") && c["Environment"].is_object()) {
    for (const auto& [k, v] : c["Environment"].items()) {
      if (v.is_string()) out.environment[k] = v.get<std::string>();
    }
  }
}

// The container of one specification version of c (copies of either version run during a
// deployment).
Result<ContainerSpec> ContainerOf(store::Store& store, const std::string& account,
                                  const ComponentRecord& c, const json& spec) {
  ContainerSpec out;
  if (spec.contains("ModelName") && spec["ModelName"].is_string()) {
    const std::string model = spec["ModelName"];
    auto rec = store.Get({account, std::string(kModel), model});
    if (!rec.has_value()) {
      return NotFound("model " + model + " of inference component " + c.name + " no longer exists");
    }
    json body = json::parse(rec->body, nullptr, false);
    if (body.contains("PrimaryContainer")) {
      ReadContainer(body["PrimaryContainer"], out);
    } else if (body.contains("Containers") && body["Containers"].is_array() &&
               !body["Containers"].empty()) {
      ReadContainer(body["Containers"][0], out);
    }
  }
  if (spec.contains("Container")) ReadContainer(spec["Container"], out);
  if (out.image.empty()) {
    return InvalidArgument("inference component " + c.name + " names no container image");
  }
  return out;
}

std::chrono::milliseconds InvocationTimeout(const EndpointRecord& ep) {
  for (const auto& tag : ep.tags) {
    if (tag.value("Key", "") != "carve:invocation-timeout-seconds") continue;
    try {
      const double secs = std::stod(tag.value("Value", ""));
      if (secs > 0 && secs <= 3600) {
        return std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
      }
    } catch (const std::exception&) {
    }
    spdlog::warn(
        "endpoint {}: tag carve:invocation-timeout-seconds='{}' is not a number of "
        "seconds in (0, 3600]; using 60",
        ep.name, tag.value("Value", ""));
  }
  return std::chrono::seconds(60);
}

// The copy's partition as the agent names it: its position in the GPU's desired partitions,
// which are the layout's instances in creation order. Partitions are identified by their start.
int PartitionIndex(const core::Layout& layout, int start) {
  for (size_t i = 0; i < layout.instances.size(); ++i) {
    if (layout.instances[i].start == start) return static_cast<int>(i);
  }
  return -1;
}

const VariantSpec* FindVariant(const EndpointRecord& ep, const std::string& name) {
  for (const auto& v : ep.variants) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

}  // namespace

WorkloadPublisher::WorkloadPublisher(store::Store& store, nodes::NodeRegistry& registry,
                                     const RuntimeCatalog& runtimes, RouteTable& routes)
    : store_(store), registry_(registry), runtimes_(runtimes), routes_(routes) {}

void WorkloadPublisher::Publish(std::span<const EndpointEntry> endpoints,
                                std::span<const ComponentEntry> components,
                                const ComponentPlacement& placement) {
  std::map<std::string, std::vector<protocol::WorkloadDesired>> per_node;
  std::map<RouteTable::Key, RouteEndpoint> routes;
  std::map<std::pair<std::string, std::string>, const EndpointRecord*> by_name;

  for (const auto& e : endpoints) {
    const EndpointRecord& ep = e.endpoint;
    RouteEndpoint route;
    route.status = std::string(Name(ep.status));
    if (!ep.variants.empty()) {
      route.variant = ep.variants[0].name;
      route.strategy = ep.variants[0].routing_strategy;
    }
    route.timeout = InvocationTimeout(ep);
    routes[{e.record.key.account, ep.name}] = std::move(route);
    by_name[{e.record.key.account, ep.name}] = &ep;
    if (!IsCarved(ep.status)) continue;
    for (const auto& v : ep.variants) {
      auto hw = VariantHardware(v);
      if (!hw.has_value()) continue;
      core::Layout layout = v.layout;
      layout.gpu = hw->second;
      std::vector<protocol::GpuDesired> gpus;
      for (int g = 0; g < hw->first->gpu_count; ++g) {
        gpus.push_back(nodes::GpuDesiredFor(GpuIndex(static_cast<uint32_t>(g)), layout));
      }
      for (const auto& node : v.nodes) {
        // A draining node's GPUs are the lifecycle's to reset; do not carve them again.
        if (std::find(v.draining.begin(), v.draining.end(), node) != v.draining.end()) continue;
        registry_.SetGpuLayouts(NodeId(node), gpus);
      }
    }
  }

  for (const auto& entry : components) {
    const ComponentRecord& c = entry.component;
    const std::string& account = entry.record.key.account;
    auto route = routes.find({account, c.endpoint});
    if (route != routes.end()) route->second.components[c.name];  // Known, maybe no copies.
    auto copies = placement.CopiesOf(account, c.name);
    if (copies.empty()) continue;
    std::map<int64_t, Result<ContainerSpec>> containers;  // By specification version.
    std::string target;
    const VariantSpec* variant = nullptr;
    if (auto ep = by_name.find({account, c.endpoint}); ep != by_name.end()) {
      variant = FindVariant(*ep->second, c.variant);
    }
    if (variant != nullptr) {
      if (auto hw = VariantHardware(*variant); hw.has_value()) {
        target = std::string(hw->second->id);
        if (!c.partition_type.empty()) target += ":" + c.partition_type;
      }
    }
    for (const auto& copy : copies) {
      const int64_t version = copy.record.spec_version;
      auto found = containers.find(version);
      if (found == containers.end()) {
        const json* spec = c.SpecificationOf(version);
        found = containers
                    .emplace(version, spec != nullptr
                                          ? ContainerOf(store_, account, c, *spec)
                                          : Result<ContainerSpec>(NotFound(fmt::format(
                                                "specification version {} is gone", version))))
                    .first;
        if (!found->second.has_value()) {
          spdlog::warn("component {}/{}: cannot start copies of specification version {}: {}",
                       account, c.name, version, found->second.error().message);
        }
      }
      if (!found->second.has_value()) continue;
      const ContainerSpec* container = &*found->second;
      const Runtime* runtime = runtimes_.Find(container->image);
      const core::AllocationRecord& where = copy.record.placement;
      protocol::WorkloadDesired w;
      w.id = ComponentRecord::WorkloadId(account, c.name, copy.record.id);
      w.kind = "copy";
      w.name = c.name;
      w.index = copy.record.index;
      if (runtime != nullptr) {
        w.command = runtime->command;
        w.environment = runtime->environment;
      } else {
        w.image = container->image;
      }
      w.values["model_data"] = container->model_data;
      for (const auto& [k, v] : container->environment) w.environment[k] = v;
      w.environment["CARVE_INFERENCE_COMPONENT"] = c.name;
      w.environment["CARVE_ENDPOINT"] = c.endpoint;
      w.environment["CARVE_COPY"] = std::to_string(copy.record.index);
      w.environment["CARVE_SPECIFICATION_VERSION"] = std::to_string(version);
      if (!target.empty() && !w.environment.contains("CARVE_TARGET")) {
        w.environment["CARVE_TARGET"] = target;
      }
      w.device.gpus = where.gpu_indexes;
      if (where.kind == core::RequestKind::kPartition && variant != nullptr) {
        w.device.partition = PartitionIndex(variant->layout, where.partition_start);
      }
      w.cpu_milli = where.cpu_milli;
      w.memory_mib = where.host_memory_mib;
      w.restart = "always";
      w.health_check = true;
      if (route != routes.end()) {
        auto status = registry_.Workload(w.id);
        if (status && status->state == "running" && !status->address.empty() &&
            registry_.IsReady(NodeId(where.node))) {
          route->second.components[c.name].push_back({status->id, status->address});
        }
      }
      per_node[where.node].push_back(std::move(w));
    }
  }
  std::vector<NodeId> with_work;
  for (auto& [node, list] : per_node) {
    with_work.emplace_back(node);
    registry_.SetWorkloads("sagemaker", NodeId(node), std::move(list));
  }
  registry_.RetainWorkloadNodes("sagemaker", with_work);
  routes_.Replace(std::move(routes));
}

}  // namespace carve::server::sagemaker
