// Agent mode: keeping the fleet in step with the node registry, and turning placed copies into
// each node's desired state (GPU layouts + copy processes) and the runtime route table.
// Runs with the service's state lock held, at the start and end of every reconcile pass.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "catalog/catalog.h"
#include "core/layout_validator.h"
#include "server/nodes/agent_node_driver.h"
#include "server/sagemaker/component_record.h"
#include "server/sagemaker/endpoint_record.h"
#include "server/sagemaker/ops.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;
using Ops = SageMakerService::Ops;

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

Result<ContainerSpec> ContainerOf(store::Store& store, const std::string& account,
                                  const ComponentRecord& c) {
  ContainerSpec out;
  const json& spec = c.specification;
  if (spec.contains("ModelName") && spec["ModelName"].is_string()) {
    const std::string model = spec["ModelName"];
    auto rec = store.Get({account, std::string(kModel), model});
    if (!rec.has_value()) {
      return NotFound("model " + model + " of inference component " + c.name +
                      " no longer exists");
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
    spdlog::warn("endpoint {}: tag carve:invocation-timeout-seconds='{}' is not a number of "
                 "seconds in (0, 3600]; using 60",
                 ep.name, tag.value("Value", ""));
  }
  return std::chrono::seconds(60);
}

}  // namespace

void Ops::SyncNodes(SageMakerService& s) {
  nodes::NodeRegistry* registry = s.options_.registry;
  if (registry == nullptr) return;
  for (const auto& view : registry->Nodes()) {
    const NodeId id(view.registration.node_id);
    Status st = s.fleet_.AddNode(id, view.registration.instance_type, view.ready);
    if (!st.ok()) {
      spdlog::warn("node {}: {}", id.value(), st.error().message);
      continue;
    }
    s.fleet_.SetReady(id, view.ready);
  }
}

void Ops::PublishWorkloads(SageMakerService& s) {
  nodes::NodeRegistry* registry = s.options_.registry;
  if (registry == nullptr) return;
  std::map<std::string, std::vector<protocol::WorkloadDesired>> per_node;
  std::map<RouteTable::Key, RouteEndpoint> routes;
  std::map<std::pair<std::string, std::string>, EndpointRecord> endpoints;

  if (auto eps = s.store_.ListAllAccounts(std::string(kEndpoint)); eps.has_value()) {
    for (const auto& rec : *eps) {
      auto ep = EndpointRecord::FromRecord(rec);
      if (!ep.has_value()) continue;
      RouteEndpoint route;
      route.status = ep->status;
      if (!ep->variants.empty()) {
        route.variant = ep->variants[0].name;
        route.strategy = ep->variants[0].routing_strategy;
      }
      route.timeout = InvocationTimeout(*ep);
      routes[{rec.key.account, ep->name}] = std::move(route);
      // Desired GPU layouts of carved nodes (idempotent: unchanged entries bump nothing). This
      // also re-teaches agents the layouts after a server restart.
      if (ep->status == "InService" || ep->status == "Updating") {
        for (const auto& v : ep->variants) {
          auto hw = VariantHardware(v);
          if (!hw.has_value()) continue;
          core::Layout layout{hw->second, {}};
          if (v.partition_types) {
            core::LayoutOptions options;
            options.sagemaker_rules = true;
            auto l = core::ValidateLayout(*hw->second, *v.partition_types, options);
            if (!l.has_value()) continue;
            layout = std::move(l).value();
          }
          for (const auto& node : v.nodes) {
            for (int g = 0; g < hw->first->gpu_count; ++g) {
              registry->SetGpuLayout(NodeId(node),
                                     nodes::GpuDesiredFor(GpuIndex(static_cast<uint32_t>(g)),
                                                          layout));
            }
          }
        }
      }
      endpoints.emplace(std::make_pair(rec.key.account, ep->name), std::move(ep).value());
    }
  }

  if (auto comps = s.store_.ListAllAccounts(std::string(kInferenceComponent));
      comps.has_value()) {
    for (const auto& rec : *comps) {
      auto parsed = ComponentRecord::FromRecord(rec);
      if (!parsed.has_value()) continue;
      const ComponentRecord& c = *parsed;
      const std::string& account = rec.key.account;
      auto route = routes.find({account, c.endpoint});
      if (route != routes.end()) route->second.components[c.name];  // Known, maybe no copies.
      if (c.copies.empty()) continue;
      auto container = ContainerOf(s.store_, account, c);
      if (!container.has_value()) {
        spdlog::warn("component {}/{}: cannot start copies: {}", account, c.name,
                     container.error().message);
        continue;
      }
      const Runtime* runtime = s.options_.runtimes.Find(container->image);
      std::string target;
      if (auto ep = endpoints.find({account, c.endpoint}); ep != endpoints.end()) {
        for (const auto& v : ep->second.variants) {
          if (v.name != c.variant) continue;
          if (auto hw = VariantHardware(v); hw.has_value()) {
            target = std::string(hw->second->id);
            if (!c.partition_type.empty()) target += ":" + c.partition_type;
          }
        }
      }
      for (const auto& p : c.copies) {
        protocol::WorkloadDesired w;
        w.id = ComponentRecord::WorkloadId(account, c.name, p);
        w.kind = "copy";
        w.name = c.name;
        w.index = p.index;
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
        w.environment["CARVE_COPY"] = std::to_string(p.index);
        if (!target.empty() && !w.environment.contains("CARVE_TARGET")) {
          w.environment["CARVE_TARGET"] = target;
        }
        for (auto [g, slot] : p.slots) w.device.gpus.push_back(g);
        if (!c.partition_type.empty() && !p.slots.empty()) w.device.partition = p.slots[0].second;
        w.cpu_milli = p.cpu_milli;
        w.memory_mib = p.memory_mib;
        w.restart = "always";
        w.health_check = true;
        per_node[p.node.value()].push_back(std::move(w));
        if (route != routes.end()) {
          auto status = registry->Workload(ComponentRecord::WorkloadId(account, c.name, p));
          if (status && status->state == "running" && !status->address.empty() &&
              registry->IsReady(p.node)) {
            route->second.components[c.name].push_back({status->id, status->address});
          }
        }
      }
    }
  }
  std::vector<NodeId> with_work;
  for (auto& [node, list] : per_node) {
    with_work.emplace_back(node);
    registry->SetWorkloads("sagemaker", NodeId(node), std::move(list));
  }
  registry->RetainWorkloadNodes("sagemaker", with_work);
  s.routes_.Replace(std::move(routes));
}

// ---- FleetLease --------------------------------------------------------------------------------

namespace {
nodes::LeasedNode Leased(const fleet::NodeState& n) {
  nodes::LeasedNode out;
  out.id = n.id;
  out.instance_type = std::string(n.type->id);
  out.gpu_model = std::string(n.type->gpu_id);
  out.gpu_count = n.type->gpu_count;
  if (auto gpu = catalog::FindGpu(n.type->gpu_id); gpu.has_value()) {
    out.gpu_memory_mib = (*gpu)->memory_mib;
  }
  out.ready = n.ready;
  return out;
}
}  // namespace

Result<std::vector<NodeId>> SageMakerService::Claim(const std::string& owner,
                                                    std::string_view instance_type, int count) {
  std::lock_guard lock(mu_);
  Ops::SyncNodes(*this);
  if (!catalog::FindInstanceType(instance_type).has_value()) {
    return InvalidArgument("instance type '" + std::string(instance_type) +
                           "' is not in the catalog");
  }
  return fleet_.ClaimNodes({"", owner, owner}, instance_type, count);
}

Status SageMakerService::ClaimSpecific(const std::string& owner,
                                       const std::vector<NodeId>& nodes) {
  std::lock_guard lock(mu_);
  Ops::SyncNodes(*this);
  return fleet_.ClaimSpecific({"", owner, owner}, nodes);
}

void SageMakerService::Release(const std::string& owner) {
  std::lock_guard lock(mu_);
  fleet_.ReleaseEndpoint("", owner);
  Notify();  // Waiting endpoints may now claim the nodes.
}

std::vector<nodes::LeasedNode> SageMakerService::NodesOf(const std::string& owner) const {
  std::lock_guard lock(mu_);
  std::vector<nodes::LeasedNode> out;
  for (const auto& n : fleet_.nodes()) {
    if (n.claim && n.claim->account.empty() && n.claim->endpoint == owner) {
      out.push_back(Leased(n));
    }
  }
  return out;
}

std::vector<nodes::LeasedNode> SageMakerService::AllNodes() const {
  std::lock_guard lock(mu_);
  std::vector<nodes::LeasedNode> out;
  for (const auto& n : fleet_.nodes()) out.push_back(Leased(n));
  return out;
}

}  // namespace carve::server::sagemaker
