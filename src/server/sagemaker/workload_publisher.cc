#include "server/sagemaker/workload_publisher.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "server/nodes/agent_node_driver.h"
#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;

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
// deployment): the model's container as it was when the version was created, which the
// component keeps (or Recover's migration kept, for older records), so that copies keep
// running after DeleteModel (the placement starts no new copy of a deleted model), with the
// specification's own on top. Publishing reads no Model record.
Result<ContainerSpec> ContainerOf(const ComponentRecord& c, int64_t version, const json& spec) {
  ContainerSpec out;
  if (const json* kept = c.ModelContainerOf(version)) ReadContainer(*kept, out);
  if (spec.contains("Container")) ReadContainer(spec["Container"], out);
  if (!out.image.empty()) return out;
  if (spec.contains("ModelName") && spec["ModelName"].is_string()) {
    return NotFound(fmt::format(
        "model {} of inference component {} was deleted before its container was kept "
        "(records written before containers were kept get them when the server starts, from "
        "models that still exist)",
        spec["ModelName"].get<std::string>(), c.name));
  }
  return InvalidArgument("inference component " + c.name + " names no container image");
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

const VariantSpec* FindVariant(const EndpointRecord& ep, const std::string& name) {
  for (const auto& v : ep.variants) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

}  // namespace

protocol::WorkloadDesired PlanCopyWorkload(const CopyWorkloadInputs& in) {
  const ComponentRecord& c = in.component;
  const core::AllocationRecord& where = in.copy.placement;
  protocol::WorkloadDesired w;
  w.kind = protocol::WorkloadKind::kCopy;
  w.name = c.name;
  w.index = in.copy.index;
  if (in.runtime != nullptr) {
    w.command = in.runtime->command;
    w.environment = in.runtime->environment;
  } else {
    w.image = in.container.image;
  }
  w.values["model_data"] = in.container.model_data;
  w.model_roots = in.model_roots;
  for (const auto& [k, v] : in.container.environment) w.environment[k] = v;
  w.environment["CARVE_INFERENCE_COMPONENT"] = c.name;
  w.environment["CARVE_ENDPOINT"] = c.endpoint;
  w.environment["CARVE_COPY"] = std::to_string(in.copy.index);
  w.environment["CARVE_SPECIFICATION_VERSION"] = std::to_string(in.copy.spec_version);
  if (!in.target.empty() && !w.environment.contains("CARVE_TARGET")) {
    w.environment["CARVE_TARGET"] = in.target;
  }
  w.device.gpus = where.gpu_indexes;
  if (where.kind == core::RequestKind::kPartition) w.device.partition_start = where.partition_start;
  w.cpu_milli = where.cpu_milli;
  w.memory_mib = where.host_memory_mib;
  w.restart = protocol::RestartPolicy::kAlways;
  w.health_check = true;
  return w;
}

WorkloadPublisher::WorkloadPublisher(nodes::NodeRegistry& registry, const RuntimeCatalog& runtimes,
                                     RouteTable& routes, std::vector<std::string> model_roots)
    : registry_(registry),
      runtimes_(runtimes),
      routes_(routes),
      model_roots_(std::move(model_roots)) {}

void WorkloadPublisher::PublishLayouts(const EndpointEntry& e) {
  const EndpointRecord& ep = e.endpoint;
  if (!IsCarved(ep.status)) return;
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

WorkloadPublisher::Published WorkloadPublisher::Build(const EndpointEntry* ep,
                                                      const ComponentEntry& entry,
                                                      const ComponentPlacement& placement,
                                                      Published* old,
                                                      std::set<std::string>& touched) const {
  const ComponentRecord& c = entry.component;
  const std::string& account = entry.record.key.account;
  Published out;
  out.component_version = entry.record.version;
  out.endpoint_version = ep != nullptr ? ep->record.version : 0;
  out.copies_generation = placement.CopiesGeneration(account, c.name);
  out.endpoint = c.endpoint;
  out.partition_type = c.partition_type;
  // What can be kept: a copy's workload follows from its record, its specification version
  // (whose content never changes), the endpoint's variant, the model and the partition type.
  std::unordered_map<std::string_view, std::pair<const Published::Copy*, size_t>> keep;
  if (old != nullptr) {
    const bool reusable =
        old->endpoint_version == out.endpoint_version && old->partition_type == out.partition_type;
    std::map<std::string_view, size_t> position;  // Within its node's list.
    for (const auto& copy : old->copies) {
      if (!reusable) {
        touched.insert(copy.node);
        continue;
      }
      keep[copy.workload] = {&copy, position[copy.node]++};
    }
  }
  auto copies = placement.CopiesOf(account, c.name);
  std::map<int64_t, Result<ContainerSpec>> containers;  // By specification version.
  std::string target;
  const VariantSpec* variant = ep != nullptr ? FindVariant(ep->endpoint, c.variant) : nullptr;
  if (variant != nullptr) {
    if (auto hw = VariantHardware(*variant); hw.has_value()) {
      target = std::string(hw->second->id);
      if (!c.partition_type.empty()) target += ":" + c.partition_type;
    }
  }
  for (const auto& copy : copies) {
    const std::string id = ComponentRecord::WorkloadId(account, c.name, copy.record.id);
    if (auto kept = keep.find(id); kept != keep.end()) {
      const Published::Copy& was = *kept->second.first;
      if (was.version == copy.version && was.node == copy.record.placement.node) {
        auto& list = old->per_node.at(was.node);
        out.per_node[was.node].push_back(std::move(list[kept->second.second]));
        out.copies.push_back(was);
        keep.erase(kept);
        continue;
      }
    }
    touched.insert(copy.record.placement.node);
    const int64_t version = copy.record.spec_version;
    auto found = containers.find(version);
    if (found == containers.end()) {
      const json* spec = c.SpecificationOf(version);
      found = containers
                  .emplace(version, spec != nullptr
                                        ? ContainerOf(c, version, *spec)
                                        : Result<ContainerSpec>(NotFound(fmt::format(
                                              "specification version {} is gone", version))))
                  .first;
      if (!found->second.has_value()) {
        spdlog::warn("component {}/{}: cannot start copies of specification version {}: {}",
                     account, c.name, version, found->second.error().message);
      }
    }
    if (!found->second.has_value()) continue;
    protocol::WorkloadDesired w =
        PlanCopyWorkload({c, copy.record, *found->second, runtimes_.Find(found->second->image),
                          target, model_roots_});
    w.id = id;
    const std::string& node = copy.record.placement.node;
    out.copies.push_back({w.id, node, copy.version});
    out.per_node[node].push_back(std::move(w));
  }
  for (const auto& [id, gone] : keep) touched.insert(gone.first->node);  // Released or moved.
  return out;
}

RouteEndpoint WorkloadPublisher::RouteOf(const EndpointEntry& e,
                                         std::span<const ComponentEntry> components) const {
  const EndpointRecord& ep = e.endpoint;
  const std::string& account = e.record.key.account;
  RouteEndpoint route;
  route.status = ep.status;
  if (!ep.variants.empty()) {
    route.variant = ep.variants[0].name;
    route.strategy = ep.variants[0].routing_strategy;
  }
  route.timeout = InvocationTimeout(ep);
  for (const auto& entry : components) {
    if (entry.record.key.account != account || entry.component.endpoint != ep.name) continue;
    auto& serving = route.components[entry.component.name];  // Known, maybe no copies.
    auto published = published_.find({account, entry.component.name});
    if (published == published_.end()) continue;
    for (const auto& copy : published->second.copies) {
      auto status = registry_.Workload(copy.workload);
      if (status && status->state == protocol::WorkloadState::kRunning &&
          !status->address.empty() && registry_.IsReady(NodeId(copy.node))) {
        serving.push_back({status->id, status->address});
      }
    }
  }
  return route;
}

WorkloadPublisher::Work WorkloadPublisher::Publish(std::span<const EndpointEntry> endpoints,
                                                   std::span<const ComponentEntry> components,
                                                   const ComponentPlacement& placement,
                                                   const PassChanges& changes) {
  Work work;
  EndpointIndex by_name;
  for (const auto& e : endpoints) by_name[{e.record.key.account, e.endpoint.name}] = &e;
  for (const auto& e : endpoints) {
    if (!changes.EndpointChanged(e.record.key.account, e.endpoint.name)) continue;
    PublishLayouts(e);
    ++work.layouts;
  }
  // Components whose inputs moved are rebuilt; the nodes their workloads were or are on, and
  // the routes of their endpoints, are redone after.
  std::set<std::string> nodes;
  std::set<RecordName> routes = changes.everything ? std::set<RecordName>{} : changes.endpoints;
  work.components = RebuildComponents(by_name, components, placement, changes, nodes, routes);
  PublishNodes(nodes, changes.everything);
  work.nodes = static_cast<int>(nodes.size());
  work.routes = PublishRoutes(by_name, endpoints, components, changes, std::move(routes));
  return work;
}

const EndpointEntry* WorkloadPublisher::EndpointOf(const EndpointIndex& by_name,
                                                   const std::string& account,
                                                   const std::string& name) {
  auto it = by_name.find({account, name});
  return it == by_name.end() ? nullptr : it->second;
}

int WorkloadPublisher::RebuildComponents(const EndpointIndex& by_name,
                                         std::span<const ComponentEntry> components,
                                         const ComponentPlacement& placement,
                                         const PassChanges& changes, std::set<std::string>& nodes,
                                         std::set<RecordName>& routes) {
  int rebuilt = 0;
  std::set<RecordName> present;
  for (const auto& entry : components) {
    const std::string& account = entry.record.key.account;
    const ComponentRecord& c = entry.component;
    const RecordName key{account, c.name};
    present.insert(key);
    const EndpointEntry* ep = EndpointOf(by_name, account, c.endpoint);
    auto old = published_.find(key);
    if (!changes.everything && old != published_.end() &&
        old->second.component_version == entry.record.version &&
        old->second.endpoint_version == (ep != nullptr ? ep->record.version : 0) &&
        old->second.copies_generation == placement.CopiesGeneration(account, c.name)) {
      continue;
    }
    Published next =
        Build(ep, entry, placement, old != published_.end() ? &old->second : nullptr, nodes);
    ++rebuilt;
    if (old != published_.end()) {
      for (const auto& [node, list] : old->second.per_node) {
        if (next.per_node.contains(node)) continue;
        nodes.insert(node);
        if (auto on = on_node_.find(node); on != on_node_.end()) on->second.erase(key);
      }
    }
    for (const auto& [node, list] : next.per_node) on_node_[node].insert(key);
    routes.insert({account, c.endpoint});
    published_.insert_or_assign(key, std::move(next));
  }
  for (auto it = published_.begin(); it != published_.end();) {  // Components gone.
    if (present.contains(it->first)) {
      ++it;
      continue;
    }
    for (const auto& [node, list] : it->second.per_node) {
      nodes.insert(node);
      if (auto on = on_node_.find(node); on != on_node_.end()) on->second.erase(it->first);
    }
    routes.insert({it->first.first, it->second.endpoint});
    it = published_.erase(it);
  }
  return rebuilt;
}

void WorkloadPublisher::PublishNodes(const std::set<std::string>& nodes, bool everything) {
  // Each node's "sagemaker" workloads are the union of its components' parts, in component order.
  for (const std::string& node : nodes) {
    std::vector<protocol::WorkloadDesired> list;
    auto on = on_node_.find(node);
    if (on != on_node_.end()) {
      for (const RecordName& key : on->second) {
        const auto& part = published_.at(key).per_node;
        if (auto it = part.find(node); it != part.end()) {
          list.insert(list.end(), it->second.begin(), it->second.end());
        }
      }
      if (on->second.empty()) on_node_.erase(on);
    }
    registry_.SetWorkloads("sagemaker", NodeId(node), std::move(list));
  }
  if (everything) {
    std::vector<NodeId> with_work;
    for (const auto& [node, keys] : on_node_) with_work.emplace_back(node);
    registry_.RetainWorkloadNodes("sagemaker", with_work);
  }
}

int WorkloadPublisher::PublishRoutes(const EndpointIndex& by_name,
                                     std::span<const EndpointEntry> endpoints,
                                     std::span<const ComponentEntry> components,
                                     const PassChanges& changes, std::set<RecordName> routes) {
  // A copy's report, or its node's readiness, changes whether it is in rotation.
  if (changes.everything || changes.registry.everything) {
    std::map<RouteTable::Key, RouteEndpoint> table;
    for (const auto& e : endpoints) {
      table[{e.record.key.account, e.endpoint.name}] = RouteOf(e, components);
    }
    const int count = static_cast<int>(table.size());
    routes_.Replace(std::move(table));
    return count;
  }
  for (const std::string& id : changes.registry.workloads) {
    auto key = ComponentOfWorkload(id);
    if (!key) continue;
    if (auto p = published_.find(*key); p != published_.end()) {
      routes.insert({key->first, p->second.endpoint});
    }
  }
  for (const std::string& node : changes.registry.nodes) {
    auto on = on_node_.find(node);
    if (on == on_node_.end()) continue;
    for (const RecordName& key : on->second)
      routes.insert({key.first, published_.at(key).endpoint});
  }
  for (const RecordName& name : routes) {
    const EndpointEntry* e = EndpointOf(by_name, name.first, name.second);
    if (e == nullptr) {
      routes_.Erase(name);
    } else {
      routes_.Set(name, RouteOf(*e, components));
    }
  }
  return static_cast<int>(routes.size());
}

}  // namespace carve::server::sagemaker
