// ComponentPlacement: the pools of carved variants, recovery, and the migration of placements
// written before issue 13. The per-component pass is in component_reconcile.cc.
#include "server/sagemaker/component_placement.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "catalog/catalog.h"
#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {
namespace {

const VariantSpec* FindVariant(const EndpointRecord& ep, const std::string& name) {
  for (const auto& v : ep.variants) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

// A v1 placement named its partition by (GPU, index of the type in the variant's declared
// layout). The k-th declared partition of a type is the k-th instance of that profile in the
// carved layout (creation order), which is where the agent of that version bound it too when
// the two orders agreed.
Result<core::AllocationRecord> MigratedPlacement(const ComponentRecord& c, const VariantSpec& v,
                                                 const V1CopyPlacement& p) {
  core::AllocationRecord a;
  a.node = p.node;
  a.cpu_milli = p.cpu_milli;
  a.host_memory_mib = p.memory_mib;
  if (c.partition_type.empty()) {
    a.kind = core::RequestKind::kWholeGpus;
    for (auto [gpu, slot] : p.slots) a.gpu_indexes.push_back(gpu);
    return a;
  }
  if (p.slots.size() != 1 || !v.partition_types) {
    return InvalidArgument(fmt::format("copy {} names {} slots on a variant {} a layout", p.id,
                                       p.slots.size(), v.partition_types ? "with" : "without"));
  }
  const auto [gpu, slot] = p.slots.front();
  const std::vector<std::string>& declared = *v.partition_types;
  if (slot < 0 || slot >= static_cast<int>(declared.size())) {
    return InvalidArgument(fmt::format("copy {} names slot {}; the layout {} has {}", p.id, slot,
                                       LayoutName(v), declared.size()));
  }
  const std::string profile(catalog::NvmlProfileName(declared[slot]));
  const auto nth = std::count(declared.begin(), declared.begin() + slot, declared[slot]);
  int seen = 0;
  for (const auto& inst : v.layout.instances) {
    if (inst.profile->name != profile || seen++ != nth) continue;
    a.kind = core::RequestKind::kPartition;
    a.gpu_indexes = {gpu};
    a.profile = profile;
    a.partition_start = inst.start;
    return a;
  }
  return InvalidArgument(
      fmt::format("copy {}: the carved layout has no partition #{} of {}", p.id, nth + 1, profile));
}

}  // namespace

ComponentPlacement::ComponentPlacement(store::Store& store, nodes::NodeRegistry* registry,
                                       const Clock& clock)
    : store_(store), registry_(registry), clock_(clock) {}

Status ComponentPlacement::Recover(std::span<const EndpointEntry> endpoints,
                                   std::span<ComponentEntry> components) {
  std::map<std::pair<std::string, std::string>, const EndpointRecord*> eps;
  for (const auto& e : endpoints) eps[{e.record.key.account, e.endpoint.name}] = &e.endpoint;
  for (auto& entry : components) {
    if (entry.component.v1_copies.empty()) continue;
    auto ep = eps.find({entry.record.key.account, entry.component.endpoint});
    CARVE_RETURN_IF_ERROR(MigrateV1(ep == eps.end() ? nullptr : ep->second, entry));
  }
  CARVE_ASSIGN_OR_RETURN(auto records,
                         store_.ListAllAccounts(std::string(kInferenceComponentCopy)));
  std::map<ComponentKey, const ComponentRecord*> known;
  for (const auto& entry : components) {
    known[{entry.record.key.account, entry.component.name}] = &entry.component;
  }
  for (const auto& rec : records) {
    CARVE_ASSIGN_OR_RETURN(CopyRecord copy, CopyRecord::FromRecord(rec));
    auto c = known.find({rec.key.account, copy.component});
    if (c == known.end()) {
      spdlog::warn("copy record {}/{} names a component that does not exist; removing it",
                   rec.key.account, rec.key.name);
      (void)store_.Commit({store::Remove{rec.key, rec.version}});
      continue;
    }
    auto& cc = copies_[c->first];
    cc.variant = nodes::Owner::Endpoint(rec.key.account, c->second->endpoint, c->second->variant);
    cc.copies.push_back(
        LiveCopy{std::move(copy), rec.version, core::AllocationId(0), rec.created_ms});
  }
  for (auto& [key, cc] : copies_) {
    std::sort(cc.copies.begin(), cc.copies.end(),
              [](const LiveCopy& a, const LiveCopy& b) { return a.record.index < b.record.index; });
    cc.generation = next_generation_++;
  }
  return OkStatus();
}

Status ComponentPlacement::MigrateV1(const EndpointRecord* endpoint, ComponentEntry& entry) {
  ComponentRecord& c = entry.component;
  const std::string& account = entry.record.key.account;
  const VariantSpec* v = endpoint != nullptr ? FindVariant(*endpoint, c.variant) : nullptr;
  std::vector<store::Mutation> writes;
  for (const auto& p : c.v1_copies) {
    auto placement = v != nullptr
                         ? MigratedPlacement(c, *v, p)
                         : Result<core::AllocationRecord>(NotFound(fmt::format(
                               "endpoint {} (variant {}) is gone", c.endpoint, c.variant)));
    if (!placement.has_value()) {
      spdlog::warn("component {}/{}: dropping copy {} on {}: {}", account, c.name, p.index, p.node,
                   placement.error().message);
      continue;
    }
    CopyRecord copy{c.name, p.id, p.index, std::move(placement).value()};
    writes.push_back(store::Put{copy.Key(account), copy.ToJson().dump(), std::nullopt});
  }
  const size_t migrated = writes.size();
  c.v1_copies.clear();
  writes.push_back(store::Put{entry.record.key, c.ToJson().dump(), entry.record.version});
  CARVE_ASSIGN_OR_RETURN(auto written, store_.Commit(std::move(writes)));
  entry.record = written.back();
  spdlog::info("component {}/{}: migrated {} copy placement{} to per-copy records", account, c.name,
               migrated, migrated == 1 ? "" : "s");
  return OkStatus();
}

void ComponentPlacement::SyncPools(std::span<const EndpointEntry> endpoints,
                                   const nodes::NodeClaims& claims, const PassChanges& changes) {
  touched_pools_.clear();
  std::map<nodes::Owner, std::pair<const VariantSpec*, bool>> carved;  // -> (variant, changed)
  for (const auto& e : endpoints) {
    if (!IsCarved(e.endpoint.status)) continue;
    const bool changed = changes.EndpointChanged(e.record.key.account, e.endpoint.name);
    for (const auto& v : e.endpoint.variants) {
      if (v.nodes.empty()) continue;
      auto owner = nodes::Owner::Endpoint(e.record.key.account, e.endpoint.name, v.name);
      carved[owner] = {&v, changed};
      if (!changed) continue;
      auto it = pools_.find(owner);
      if (it == pools_.end() || it->second.node_names != v.nodes) {
        RebuildPool(owner, v);
        touched_pools_.insert(owner);
      }
    }
  }
  for (auto it = pools_.begin(); it != pools_.end();) {
    if (carved.contains(it->first)) {
      ++it;
      continue;
    }
    for (auto& [key, cc] : copies_) {
      if (cc.variant != it->first) continue;
      for (auto& copy : cc.copies) copy.allocation = core::AllocationId(0);
    }
    touched_pools_.insert(it->first);
    it = pools_.erase(it);
  }
  // Readiness; a draining node is not Ready for placement.
  auto sync = [&](const nodes::Owner& owner, VariantPool& vp, const VariantSpec* v,
                  const std::string& name) {
    auto node = claims.Find(NodeId(name));
    const bool leaving = v != nullptr && std::find(v->draining.begin(), v->draining.end(), name) !=
                                             v->draining.end();
    const bool ready = node.has_value() && node->ready && !leaving;
    if (vp.pool.Ready(name) == ready) return;
    vp.pool.SetReady(name, ready);
    touched_pools_.insert(owner);
  };
  for (auto& [owner, vp] : pools_) {
    auto found = carved.find(owner);
    const VariantSpec* v = found != carved.end() ? found->second.first : nullptr;
    const bool all = changes.everything || (found != carved.end() && found->second.second) ||
                     changes.registry.everything;
    if (all) {
      for (const auto& name : vp.node_names) sync(owner, vp, v, name);
      continue;
    }
    for (const auto& name : changes.registry.nodes) {
      if (vp.members.contains(name)) sync(owner, vp, v, name);
    }
  }
}

int ComponentPlacement::WaitingCopies(const nodes::Owner& variant) const {
  int n = 0;
  for (const auto& [key, cc] : copies_) n += cc.variant == variant ? cc.waiting : 0;
  return n;
}

std::map<std::string, size_t> ComponentPlacement::CopiesPerNode(
    const nodes::Owner& variant) const {
  std::map<std::string, size_t> out;
  for (const auto& [key, cc] : copies_) {
    if (cc.variant != variant) continue;
    for (const auto& copy : cc.copies) ++out[copy.record.placement.node];
  }
  return out;
}

void ComponentPlacement::RebuildPool(const nodes::Owner& owner, const VariantSpec& v) {
  std::vector<nodes::PoolNode> nodes;
  for (const auto& n : v.nodes) nodes.push_back({n, v.instance_type});
  nodes::PoolOptions options;
  options.mode = v.layout.instances.empty() ? core::GpuMode::kWhole : core::GpuMode::kMig;
  options.layout = v.layout;
  auto pool = nodes::NodePool::Create(std::move(nodes), std::move(options));
  if (!pool.has_value()) {
    spdlog::error("{}: cannot build its capacity: {}", owner.Describe(), pool.error().message);
    pools_.erase(owner);
    return;
  }
  VariantPool vp{std::move(pool).value(), v.nodes, {v.nodes.begin(), v.nodes.end()}, {}};
  for (auto& [key, cc] : copies_) {
    if (cc.variant != owner) continue;
    for (auto& copy : cc.copies) AdoptInto(vp, owner, key.first, copy);
  }
  pools_.insert_or_assign(owner, std::move(vp));
}

void ComponentPlacement::AdoptInto(VariantPool& vp, const nodes::Owner& owner,
                                   const std::string& account, LiveCopy& copy) {
  auto id = vp.pool.Adopt(copy.record.placement);
  if (!id.has_value()) {
    // The partition is gone from the variant (its node left it): the pass places it again.
    spdlog::warn("{}: copy {} of {} cannot keep its place: {}", owner.Describe(), copy.record.index,
                 copy.record.component, id.error().message);
    copy.allocation = core::AllocationId(0);
    return;
  }
  copy.allocation = *id;
  vp.occupants[id->value()] =
      CopyOccupant{account, copy.record.component, copy.record.id, copy.record.index};
}

void ComponentPlacement::ReleaseCopy(LiveCopy& copy, const nodes::Owner& owner) {
  auto it = pools_.find(owner);
  if (it != pools_.end() && copy.allocation.value() != 0) {
    it->second.pool.Release(copy.allocation);
    it->second.occupants.erase(copy.allocation.value());
  }
  copy.allocation = core::AllocationId(0);
}

uint64_t ComponentPlacement::CopiesGeneration(const std::string& account,
                                              const std::string& component) const {
  auto it = copies_.find({account, component});
  return it == copies_.end() ? 0 : it->second.generation;
}

std::span<const LiveCopy> ComponentPlacement::CopiesOf(const std::string& account,
                                                       const std::string& component) const {
  auto it = copies_.find({account, component});
  if (it == copies_.end()) return {};
  return it->second.copies;
}

const nodes::NodePool* ComponentPlacement::PoolOf(const nodes::Owner& variant) const {
  auto it = pools_.find(variant);
  return it == pools_.end() ? nullptr : &it->second.pool;
}

const CopyOccupant* ComponentPlacement::OccupantOf(const nodes::Owner& variant,
                                                   core::AllocationId id) const {
  auto it = pools_.find(variant);
  if (it == pools_.end()) return nullptr;
  auto o = it->second.occupants.find(id.value());
  return o == it->second.occupants.end() ? nullptr : &o->second;
}

}  // namespace carve::server::sagemaker
