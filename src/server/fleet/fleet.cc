#include "server/fleet/fleet.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "catalog/catalog.h"

namespace carve::server::fleet {
namespace {

using nlohmann::json;

int OccupiedSlots(const GpuState& gpu) {
  int n = 0;
  for (const auto& s : gpu.slots) n += s.occupant.empty() ? 0 : 1;
  return n;
}

int OccupiedSlots(const NodeState& node) {
  int n = 0;
  for (const auto& g : node.gpus) n += OccupiedSlots(g);
  return n;
}

int CopiesOf(const NodeState& node, std::string_view occupant) {
  int n = 0;
  for (const auto& g : node.gpus) {
    for (const auto& s : g.slots) n += s.occupant == occupant ? 1 : 0;
  }
  return n;
}

bool HostFits(const NodeState& node, const CopyRequest& r) {
  return node.cpu_used_milli + r.cpu_milli <= int64_t{node.type->vcpus} * 1000 &&
         node.memory_used_mib + r.memory_mib <= node.type->memory_mib;
}

// Free slots on `gpu` matching the request (partition mode), or whether the GPU is whole and
// free (whole-GPU mode).
std::vector<int> FreeMatching(const GpuState& gpu, const CopyRequest& r) {
  std::vector<int> out;
  for (size_t i = 0; i < gpu.slots.size(); ++i) {
    const Slot& s = gpu.slots[i];
    if (s.occupant.empty() && s.type == r.partition_type) out.push_back(static_cast<int>(i));
  }
  return out;
}

// Picks GPUs on one node for the copy, or nothing if the node cannot take it.
std::optional<std::vector<std::pair<int, int>>> PickSlots(const NodeState& node,
                                                          const CopyRequest& r) {
  struct Choice {
    int gpu;
    int slot;
    int occupied;
  };
  std::vector<Choice> choices;
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    auto free = FreeMatching(node.gpus[g], r);
    if (!free.empty()) {
      choices.push_back({static_cast<int>(g), free.front(), OccupiedSlots(node.gpus[g])});
    }
  }
  const int wanted = r.partition_type.empty() ? r.devices : 1;
  if (static_cast<int>(choices.size()) < wanted) return std::nullopt;
  // SPREAD: emptiest GPU first; BINPACK: fullest GPU first. Ties by GPU index (stable).
  std::stable_sort(choices.begin(), choices.end(), [&](const Choice& a, const Choice& b) {
    return r.strategy == PlacementStrategy::kSpread ? a.occupied < b.occupied
                                                    : a.occupied > b.occupied;
  });
  std::vector<std::pair<int, int>> out;
  for (int i = 0; i < wanted; ++i) out.emplace_back(choices[i].gpu, choices[i].slot);
  std::sort(out.begin(), out.end());
  return out;
}

std::string Describe(const CopyRequest& r) {
  return r.partition_type.empty()
             ? fmt::format("{} whole GPU{}", r.devices, r.devices == 1 ? "" : "s")
             : fmt::format("a {} partition", r.partition_type);
}

}  // namespace

Status Fleet::AddNode(const NodeId& id, std::string_view instance_type, bool ready) {
  if (Find(id) != nullptr) return OkStatus();
  auto type = catalog::FindInstanceType(instance_type);
  if (!type.has_value()) {
    return InvalidArgument(fmt::format("node '{}': {}", id.value(), type.error().message));
  }
  NodeState node;
  node.id = id;
  node.type = *type;
  node.ready = ready;
  node.gpus.resize(static_cast<size_t>(std::max(0, (*type)->gpu_count)));
  nodes_.push_back(std::move(node));
  return OkStatus();
}

bool Fleet::SetReady(const NodeId& id, bool ready) {
  NodeState* n = MutableFind(id);
  if (n == nullptr || n->ready == ready) return false;
  n->ready = ready;
  return true;
}

Result<Fleet> Fleet::Create(const FleetConfig& config) {
  Fleet fleet;
  for (const auto& spec : config.nodes) {
    auto type = catalog::FindInstanceType(spec.instance_type);
    if (!type.has_value()) {
      return InvalidArgument(
          fmt::format("fleet node '{}': {}", spec.id.value(), type.error().message));
    }
    NodeState node;
    node.id = spec.id;
    node.type = *type;
    node.gpus.resize(static_cast<size_t>(std::max(0, (*type)->gpu_count)));
    fleet.nodes_.push_back(std::move(node));
  }
  return fleet;
}

const NodeState* Fleet::Find(const NodeId& id) const {
  for (const auto& n : nodes_) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

NodeState* Fleet::MutableFind(const NodeId& id) {
  return const_cast<NodeState*>(static_cast<const Fleet*>(this)->Find(id));
}

Result<std::vector<NodeId>> Fleet::ClaimNodes(const Claim& claim, std::string_view instance_type,
                                              int count) {
  std::vector<NodeState*> free;
  int total = 0;
  int not_ready = 0;
  for (auto& n : nodes_) {
    if (n.type->id != instance_type) continue;
    ++total;
    if (n.claim) continue;
    if (n.ready) {
      free.push_back(&n);
    } else {
      ++not_ready;
    }
  }
  if (static_cast<int>(free.size()) < count &&
      static_cast<int>(free.size()) + not_ready >= count) {
    return Unavailable(fmt::format(
        "Variant {} needs {} x {}; {} free instance{} NotReady (their agents are not reporting)",
        claim.variant, count, instance_type, not_ready, not_ready == 1 ? " is" : "s are"));
  }
  if (static_cast<int>(free.size()) < count) {
    return ResourceExhausted(fmt::format(
        "Variant {} needs {} x {} instance{}; the fleet has {}, {} free. Missing: {} x {}.",
        claim.variant, count, instance_type, count == 1 ? "" : "s", total, free.size(),
        count - static_cast<int>(free.size()), instance_type));
  }
  std::vector<NodeId> ids;
  for (int i = 0; i < count; ++i) {
    free[i]->claim = claim;
    ids.push_back(free[i]->id);
  }
  return ids;
}

Status Fleet::ClaimSpecific(const Claim& claim, std::span<const NodeId> ids) {
  for (const auto& id : ids) {
    const NodeState* n = Find(id);
    if (n == nullptr) {
      return NotFound(fmt::format("node '{}' is no longer in the fleet", id.value()));
    }
    if (n->claim && !(*n->claim == claim)) {
      return FailedPrecondition(
          fmt::format("node '{}' is held by endpoint '{}'", id.value(), n->claim->endpoint));
    }
  }
  for (const auto& id : ids) MutableFind(id)->claim = claim;
  return OkStatus();
}

std::vector<NodeId> Fleet::NodesOf(std::string_view account, std::string_view endpoint) const {
  std::vector<NodeId> out;
  for (const auto& n : nodes_) {
    if (n.claim && n.claim->account == account && n.claim->endpoint == endpoint) {
      out.push_back(n.id);
    }
  }
  return out;
}

Status Fleet::SetCarve(const NodeId& id, std::span<const std::string> types) {
  NodeState* n = MutableFind(id);
  if (n == nullptr) return NotFound(fmt::format("no node '{}' in the fleet", id.value()));
  for (auto& gpu : n->gpus) {
    gpu.slots.clear();
    if (types.empty()) {
      gpu.slots.push_back({"", ""});
    } else {
      for (const auto& t : types) gpu.slots.push_back({t, ""});
    }
  }
  n->cpu_used_milli = 0;
  n->memory_used_mib = 0;
  n->carved = true;
  return OkStatus();
}

void Fleet::ReleaseEndpoint(std::string_view account, std::string_view endpoint) {
  for (auto& n : nodes_) {
    if (!n.claim || n.claim->account != account || n.claim->endpoint != endpoint) continue;
    n.claim.reset();
    n.carved = false;
    for (auto& g : n.gpus) g.slots.clear();
    n.cpu_used_milli = 0;
    n.memory_used_mib = 0;
  }
}

PlaceOutcome Fleet::Place(const Claim& claim, const CopyRequest& r) {
  struct Candidate {
    NodeState* node;
    std::vector<std::pair<int, int>> slots;
    int copies;
    int occupied;
  };
  std::vector<Candidate> candidates;
  int carved_nodes = 0;
  int matching_free = 0;
  std::string host_reason;
  for (auto& n : nodes_) {
    if (!n.claim || !(*n.claim == claim) || !n.carved || !n.ready) continue;
    ++carved_nodes;
    auto slots = PickSlots(n, r);
    if (!slots) continue;
    matching_free += static_cast<int>(slots->size());
    if (!HostFits(n, r)) {
      host_reason = fmt::format(
          "instance {} has {} free but its host has {} of {} vCPUs and {} of {} MiB memory free; "
          "a copy needs {} vCPUs and {} MiB",
          n.id.value(), Describe(r),
          fmt::format("{:g}", static_cast<double>(n.type->vcpus * 1000 - n.cpu_used_milli) / 1000),
          n.type->vcpus, n.type->memory_mib - n.memory_used_mib, n.type->memory_mib,
          fmt::format("{:g}", static_cast<double>(r.cpu_milli) / 1000), r.memory_mib);
      continue;
    }
    candidates.push_back({&n, std::move(*slots), CopiesOf(n, r.occupant), OccupiedSlots(n)});
  }
  if (candidates.empty()) {
    if (carved_nodes == 0)
      return {std::nullopt, "waiting for the endpoint's instances to be carved and Ready"};
    if (matching_free > 0) return {std::nullopt, host_reason};
    return {std::nullopt,
            fmt::format("waiting for {}: none is free on the {} instance{} of "
                        "variant {}",
                        Describe(r), carved_nodes, carved_nodes == 1 ? "" : "s", claim.variant)};
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const Candidate& a, const Candidate& b) {
                     if (r.strategy == PlacementStrategy::kSpread) {
                       return std::tie(a.copies, a.occupied) < std::tie(b.copies, b.occupied);
                     }
                     return a.occupied > b.occupied;
                   });
  Candidate& c = candidates.front();
  for (auto [g, s] : c.slots) c.node->gpus[g].slots[s].occupant = r.occupant;
  c.node->cpu_used_milli += r.cpu_milli;
  c.node->memory_used_mib += r.memory_mib;
  return {CopyPlacement{"", 0, c.node->id, c.slots, r.cpu_milli, r.memory_mib}, ""};
}

Status Fleet::Occupy(const CopyPlacement& p, std::string_view occupant) {
  NodeState* n = MutableFind(p.node);
  if (n == nullptr) return NotFound(fmt::format("no node '{}' in the fleet", p.node.value()));
  for (auto [g, s] : p.slots) {
    if (g < 0 || g >= static_cast<int>(n->gpus.size()) || s < 0 ||
        s >= static_cast<int>(n->gpus[g].slots.size())) {
      return NotFound(fmt::format("node '{}' has no slot {} on GPU {}", p.node.value(), s, g));
    }
    const auto& slot = n->gpus[g].slots[s];
    if (!slot.occupant.empty() && slot.occupant != occupant) {
      return FailedPrecondition(fmt::format("slot {} on GPU {} of node '{}' is held by '{}'", s, g,
                                            p.node.value(), slot.occupant));
    }
  }
  for (auto [g, s] : p.slots) n->gpus[g].slots[s].occupant = std::string(occupant);
  n->cpu_used_milli += p.cpu_milli;
  n->memory_used_mib += p.memory_mib;
  return OkStatus();
}

void Fleet::Release(const CopyPlacement& p) {
  NodeState* n = MutableFind(p.node);
  if (n == nullptr) return;
  bool any = false;
  for (auto [g, s] : p.slots) {
    if (g < 0 || g >= static_cast<int>(n->gpus.size()) || s < 0 ||
        s >= static_cast<int>(n->gpus[g].slots.size())) {
      continue;
    }
    any = any || !n->gpus[g].slots[s].occupant.empty();
    n->gpus[g].slots[s].occupant.clear();
  }
  if (!any) return;  // Already released (e.g. the endpoint went away first).
  n->cpu_used_milli = std::max<int64_t>(0, n->cpu_used_milli - p.cpu_milli);
  n->memory_used_mib = std::max<int64_t>(0, n->memory_used_mib - p.memory_mib);
}

namespace {

json NodeJson(const NodeState& n) {
  json gpus = json::array();
  for (size_t g = 0; g < n.gpus.size(); ++g) {
    json slots = json::array();
    for (const auto& s : n.gpus[g].slots) {
      slots.push_back({{"partition_type", s.type.empty() ? json(nullptr) : json(s.type)},
                       {"occupant", s.occupant.empty() ? json(nullptr) : json(s.occupant)}});
    }
    gpus.push_back({{"index", g}, {"gpu", n.type->gpu_id}, {"partitions", slots}});
  }
  json claim = nullptr;
  if (n.claim) {
    claim = {{"account", n.claim->account},
             {"endpoint", n.claim->endpoint},
             {"variant", n.claim->variant}};
  }
  return {{"name", n.id.value()},
          {"instance_type", n.type->id},
          {"ready", n.ready},
          {"claim", claim},
          {"carved", n.carved},
          {"vcpus", n.type->vcpus},
          {"vcpus_used", static_cast<double>(n.cpu_used_milli) / 1000},
          {"memory_mib", n.type->memory_mib},
          {"memory_used_mib", n.memory_used_mib},
          {"gpus", gpus}};
}

}  // namespace

json Fleet::ToJson() const {
  json nodes = json::array();
  for (const auto& n : nodes_) nodes.push_back(NodeJson(n));
  return {{"nodes", nodes}};
}

json Fleet::EndpointJson(std::string_view account, std::string_view endpoint) const {
  json nodes = json::array();
  for (const auto& n : nodes_) {
    if (n.claim && n.claim->account == account && n.claim->endpoint == endpoint) {
      nodes.push_back(NodeJson(n));
    }
  }
  return {{"endpoint", endpoint}, {"nodes", nodes}};
}

json PlacementToJson(const CopyPlacement& p) {
  json slots = json::array();
  for (auto [g, s] : p.slots) slots.push_back({g, s});
  return {{"id", p.id},
          {"index", p.index},
          {"node", p.node.value()},
          {"slots", slots},
          {"cpu_milli", p.cpu_milli},
          {"memory_mib", p.memory_mib}};
}

Result<CopyPlacement> PlacementFromJson(const json& j) {
  try {
    CopyPlacement p;
    p.node = NodeId(j.at("node").get<std::string>());
    for (const auto& s : j.at("slots"))
      p.slots.emplace_back(s.at(0).get<int>(), s.at(1).get<int>());
    p.cpu_milli = j.at("cpu_milli").get<int64_t>();
    p.memory_mib = j.at("memory_mib").get<int64_t>();
    p.index = j.value("index", 0);
    // Records written before copy ids existed: derive a stable one from the first slot.
    p.id = j.contains("id") ? j.at("id").get<std::string>()
                            : fmt::format("{}-g{}s{}", p.node.value(),
                                          p.slots.empty() ? 0 : p.slots[0].first,
                                          p.slots.empty() ? 0 : p.slots[0].second);
    return p;
  } catch (const json::exception& e) {
    return Internal(fmt::format("stored placement is malformed: {}", e.what()));
  }
}

}  // namespace carve::server::fleet
