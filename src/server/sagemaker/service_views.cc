// SageMakerService's read views: GET /v1/fleet, GET /v1/endpoints/{name}/carve, and the gauges.
// Partitions are drawn from the variants' pools, so a view shows exactly what placement sees.
#include <map>
#include <set>
#include <tuple>

#include "catalog/catalog.h"
#include "core/layout_units.h"
#include "server/sagemaker/ops.h"
#include "server/sagemaker/resources.h"
#include "server/sagemaker/service.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;

json ClaimJson(const std::optional<nodes::Owner>& owner, const std::string& account) {
  if (!owner) return nullptr;
  if (owner->kind == nodes::Owner::Kind::kReset) {
    // A deleted endpoint's node, held until its agent reports every GPU whole.
    return {{"kind", "reset"}, {"account", nullptr}, {"endpoint", nullptr}, {"variant", nullptr}};
  }
  if (owner->account != account) {
    return {{"kind", "other"}, {"account", nullptr}, {"endpoint", nullptr}, {"variant", nullptr}};
  }
  if (owner->kind == nodes::Owner::Kind::kQueue) {
    return {{"kind", "queue"},
            {"account", owner->account},
            {"queue", owner->name},
            {"endpoint", nullptr},
            {"variant", nullptr}};
  }
  return {{"kind", "endpoint"},
          {"account", owner->account},
          {"endpoint", owner->name},
          {"variant", owner->variant}};
}

}  // namespace

// A pool's partitions and whole-GPU holders, grouped by node: built once per view, so that
// drawing N nodes costs O(N), not O(N x pool).
struct SageMakerService::PoolIndex {
  std::map<std::string, std::vector<core::PartitionUsage>, std::less<>> partitions;
  std::map<std::string, std::vector<core::AllocationRecord>, std::less<>> allocations;
};

const SageMakerService::PoolIndex& SageMakerService::IndexOf(
    const nodes::NodePool& pool, std::map<const nodes::NodePool*, PoolIndex>& cache) {
  auto [it, added] = cache.try_emplace(&pool);
  if (added) {
    for (auto& p : pool.engine().Partitions()) {
      it->second.partitions[std::string(p.node)].push_back(p);
    }
    for (auto& a : pool.engine().Allocations()) it->second.allocations[a.node].push_back(a);
  }
  return it->second;
}

json SageMakerService::NodeJson(const nodes::ClaimedNode& node, const std::string& account,
                                std::map<const nodes::NodePool*, PoolIndex>& cache) const {
  const catalog::InstanceType& type = *node.type;
  const bool mine = node.owner && node.owner->account == account;
  const nodes::NodePool* pool = mine && node.owner->kind == nodes::Owner::Kind::kEndpoint
                                    ? placement_.PoolOf(*node.owner)
                                    : nullptr;
  const std::string& name = node.id.value();
  json out = {{"name", name},
              {"instance_type", type.id},
              {"ready", node.ready},
              {"claim", ClaimJson(node.owner, account)},
              {"carved", pool != nullptr},
              {"vcpus", type.vcpus},
              {"vcpus_used", 0.0},
              {"memory_mib", type.memory_mib},
              {"memory_used_mib", 0}};
  auto gpu_model = catalog::FindGpu(type.gpu_id);
  std::vector<json> gpus;
  for (int g = 0; g < type.gpu_count; ++g) {
    gpus.push_back({{"index", g},
                    {"gpu", type.gpu_id},
                    {"mode", pool == nullptr ? "unassigned" : "whole"},
                    {"partitions", json::array()}});
  }
  if (pool == nullptr) {
    out["gpus"] = gpus;
    return out;
  }
  if (auto host = pool->engine().Host(name)) {
    out["vcpus_used"] = static_cast<double>(host->cpu_used_milli) / 1000.0;
    out["memory_used_mib"] = host->memory_used_mib;
  }
  auto copy_json = [&](core::AllocationId id) -> std::pair<json, json> {
    const CopyOccupant* o = id.value() != 0 ? placement_.OccupantOf(*node.owner, id) : nullptr;
    if (o == nullptr) return {nullptr, nullptr};
    std::string state = "placed";
    if (options_.registry != nullptr) {
      auto w = options_.registry->Workload(
          ComponentRecord::WorkloadId(o->account, o->component, o->copy_id));
      state = NameOf(w ? w->state : protocol::WorkloadState::kStarting);
    }
    return {
        o->account + "/" + o->component,
        {{"component", o->component}, {"index", o->index}, {"id", o->copy_id}, {"state", state}}};
  };
  const core::Layout& layout = pool->options().layout;
  const PoolIndex& index = IndexOf(*pool, cache);
  static const std::vector<core::PartitionUsage> kNoPartitions;
  static const std::vector<core::AllocationRecord> kNoAllocations;
  auto parts = index.partitions.find(name);
  auto allocs = index.allocations.find(name);
  if (pool->options().mode == core::GpuMode::kMig && gpu_model.has_value()) {
    const core::UnitUse units = core::UnitsOf(**gpu_model, layout);
    for (auto& gj : gpus) {
      gj["mode"] = "mig";
      gj["placement_units"] = units.placement_units;
      gj["free_units"] = units.free;
      gj["stranded_units"] = units.stranded;
    }
    for (const auto& p : parts == index.partitions.end() ? kNoPartitions : parts->second) {
      if (p.gpu < 0 || p.gpu >= type.gpu_count) continue;
      auto [occupant, copy] = copy_json(p.allocation);
      gpus[p.gpu]["partitions"].push_back(
          {{"partition_type", catalog::SageMakerName(*p.instance.profile)},
           {"profile", p.instance.profile->name},
           {"start", p.instance.start},
           {"size", p.instance.profile->placement_size},
           {"occupant", occupant},
           {"copy", copy}});
    }
  } else {
    std::vector<core::AllocationId> holder(static_cast<size_t>(type.gpu_count));
    for (const auto& a : allocs == index.allocations.end() ? kNoAllocations : allocs->second) {
      for (int g : a.gpu_indexes) {
        if (g >= 0 && g < type.gpu_count) holder[g] = a.id;
      }
    }
    for (int g = 0; g < type.gpu_count; ++g) {
      auto [occupant, copy] = copy_json(holder[g]);
      gpus[g]["partitions"].push_back({{"partition_type", nullptr},
                                       {"profile", nullptr},
                                       {"occupant", occupant},
                                       {"copy", copy}});
    }
  }
  out["gpus"] = gpus;
  return out;
}

json SageMakerService::FleetJson(const std::string& account) const {
  std::lock_guard lock(mu_);
  json nodes = json::array();
  std::map<const nodes::NodePool*, PoolIndex> cache;
  for (const auto& n : claims_.All()) nodes.push_back(NodeJson(n, account, cache));
  return {{"nodes", nodes}};
}

Result<json> SageMakerService::EndpointsViewJson(const std::string& account) const {
  // The records first, outside the state lock: a Store read may be a network round trip (etcd).
  const store::ListOptions all;
  CARVE_ASSIGN_OR_RETURN(auto endpoint_recs, store_.List(account, std::string(kEndpoint), all));
  CARVE_ASSIGN_OR_RETURN(auto config_recs, store_.List(account, std::string(kEndpointConfig), all));
  CARVE_ASSIGN_OR_RETURN(auto component_recs,
                         store_.List(account, std::string(kInferenceComponent), all));
  json unreadable = json::array();
  // Each answer is the operation's own, so the page reads exactly what the API says.
  auto describe = [&](const store::Record& rec, auto how) -> std::optional<json> {
    Result<json> out = how(ops_, rec);
    if (out.has_value()) return std::move(*out);
    unreadable.push_back(
        {{"kind", rec.key.kind}, {"name", rec.key.name}, {"error", out.error().message}});
    return std::nullopt;
  };
  std::map<std::string, const store::Record*, std::less<>> configs;
  for (const store::Record& rec : config_recs) configs.emplace(rec.key.name, &rec);
  json endpoints = json::array();
  for (const store::Record& rec : endpoint_recs) {
    std::optional<json> ep = describe(rec, &EndpointDescription);
    if (!ep) continue;
    // The configuration may have been deleted since: an endpoint keeps its own copy of it.
    auto cfg = configs.find((*ep)["EndpointConfigName"].get<std::string>());
    std::optional<json> config;
    if (cfg != configs.end()) config = describe(*cfg->second, &EndpointConfigDescription);
    (*ep)["EndpointConfig"] = config.value_or(nullptr);
    endpoints.push_back(std::move(*ep));
  }
  json components = json::array();
  for (const store::Record& rec : component_recs) {
    if (auto c = describe(rec, &ComponentDescription)) components.push_back(std::move(*c));
  }

  std::lock_guard lock(mu_);
  std::map<const nodes::NodePool*, PoolIndex> cache;
  for (json& ep : endpoints) {
    json held = json::array();
    for (const json& v : ep["ProductionVariants"]) {
      const auto owner = nodes::Owner::Endpoint(account, ep["EndpointName"].get<std::string>(),
                                                v["VariantName"].get<std::string>());
      for (const auto& n : claims_.NodesOf(owner)) held.push_back(NodeJson(n, account, cache));
    }
    ep["Nodes"] = std::move(held);
  }
  return json{{"Endpoints", std::move(endpoints)},
              {"InferenceComponents", std::move(components)},
              {"Unreadable", std::move(unreadable)}};
}

Result<json> SageMakerService::EndpointCarveJson(const std::string& account,
                                                 const std::string& endpoint) const {
  std::lock_guard lock(mu_);
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ops_.Get(account, kEndpoint, endpoint));
  CARVE_ASSIGN_OR_RETURN(EndpointRecord ep, EndpointRecord::FromRecord(rec));
  json nodes = json::array();
  std::map<const nodes::NodePool*, PoolIndex> cache;
  for (const auto& v : ep.variants) {
    for (const auto& n : claims_.NodesOf(nodes::Owner::Endpoint(account, endpoint, v.name))) {
      nodes.push_back(NodeJson(n, account, cache));
    }
  }
  json variants = json::array();
  for (const auto& v : ep.variants) variants.push_back(VariantToJson(v));
  return json{{"endpoint", endpoint},
              {"nodes", nodes},
              {"status", Name(ep.status)},
              {"variants", variants}};
}

Result<json> SageMakerService::ComponentCopiesJson(const std::string& account,
                                                   const std::string& component) const {
  std::lock_guard lock(mu_);
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ops_.Get(account, kInferenceComponent, component));
  CARVE_ASSIGN_OR_RETURN(ComponentRecord c, ComponentRecord::FromRecord(rec));
  json copies = json::array();
  for (const LiveCopy& copy : placement_.CopiesOf(account, component)) {
    json j = {{"index", copy.record.index},
              {"id", copy.record.id},
              {"node", copy.record.placement.node},
              {"specification_version", copy.record.spec_version},
              {"current", copy.record.spec_version == c.spec_version}};
    if (options_.registry != nullptr) {
      auto w = options_.registry->Workload(
          ComponentRecord::WorkloadId(account, component, copy.record.id));
      j["state"] = w ? NameOf(w->state) : "pending";
    } else {
      j["state"] = "running";  // Simulated mode: a placed copy serves.
    }
    copies.push_back(std::move(j));
  }
  json out = {{"component", component},
              {"status", Name(c.status)},
              {"specification_version", c.spec_version},
              {"specification", c.specification},
              {"copies", copies}};
  if (c.deployment) {
    out["deployment"] = {
        {"phase", c.deployment->phase == DeploymentPhase::kRolling ? "Rolling" : "RollingBack"},
        {"from_specification_version", c.deployment->from.version},
        {"from_specification", c.deployment->from.specification},
        {"reason", c.deployment->reason}};
  }
  return out;
}

std::vector<nodes::ShapeFragmentation> SageMakerService::Fragmentation(
    const std::string& account) const {
  std::lock_guard lock(mu_);
  std::vector<nodes::ShapeFragmentation> out;
  auto components = LoadComponents();
  if (!components.has_value()) return out;
  std::set<std::tuple<nodes::Owner, std::string, int, int64_t, int64_t>> seen;
  for (const auto& e : *components) {
    const ComponentRecord& c = e.component;
    if (e.record.key.account != account || c.status == ComponentStatus::kDeleting) continue;
    const auto owner = nodes::Owner::Endpoint(account, c.endpoint, c.variant);
    if (!seen.insert({owner, c.partition_type, c.devices, c.cpu_milli, c.memory_mib}).second) {
      continue;
    }
    const nodes::NodePool* pool = placement_.PoolOf(owner);
    if (pool == nullptr) continue;
    auto f = pool->Fragmentation(owner, c.CopyRequest());
    if (f.has_value()) out.push_back(std::move(f).value());
  }
  return out;
}

SageMakerService::Snapshot SageMakerService::TakeSnapshot() const {
  Snapshot snap;
  std::lock_guard lock(mu_);
  placement_.ForEachPool([&](const nodes::Owner&, const nodes::NodePool& pool) {
    if (pool.options().mode == core::GpuMode::kMig) {
      for (const auto& p : pool.engine().Partitions()) {
        const std::string gpu(pool.options().layout.gpu != nullptr ? pool.options().layout.gpu->id
                                                                   : "");
        auto& cell = snap.partitions[{gpu, catalog::SageMakerName(*p.instance.profile)}];
        ++cell.first;
        cell.second += p.allocation.value() != 0 ? 1 : 0;
      }
      return;
    }
    for (const auto& g : pool.engine().Gpus()) {
      auto& cell = snap.partitions[{std::string(g.model->id), "whole"}];
      ++cell.first;
      cell.second += g.busy ? 1 : 0;
    }
  });
  if (auto comps = LoadComponents(); comps.has_value()) {
    for (const auto& e : *comps) {
      snap.copies[{e.record.key.account, e.component.name}] = {e.component.desired,
                                                               e.component.running};
    }
  }
  if (auto eps = LoadEndpoints(); eps.has_value()) {
    for (const auto& e : *eps) ++snap.endpoints_by_status[std::string(Name(e.endpoint.status))];
  }
  return snap;
}

}  // namespace carve::server::sagemaker
