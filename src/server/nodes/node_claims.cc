#include "server/nodes/node_claims.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "catalog/catalog.h"
#include "server/nodes/node_registry.h"

namespace carve::server::nodes {

Owner Owner::Endpoint(std::string account, std::string endpoint, std::string variant) {
  return Owner{Kind::kEndpoint, std::move(account), std::move(endpoint), std::move(variant)};
}

Owner Owner::Queue(std::string account, std::string queue) {
  return Owner{Kind::kQueue, std::move(account), std::move(queue), ""};
}

Owner Owner::Reset(const NodeId& node) { return Owner{Kind::kReset, "", node.value(), ""}; }

std::string Owner::Describe() const {
  switch (kind) {
    case Kind::kQueue:
      return fmt::format("queue {}", name);
    case Kind::kReset:
      return fmt::format("the GPU reset of node {}", name);
    case Kind::kEndpoint:
      break;
  }
  return fmt::format("variant {} of endpoint {}", variant, name);
}

std::string Owner::Subject() const {
  switch (kind) {
    case Kind::kQueue:
      return fmt::format("Queue {}", name);
    case Kind::kReset:
      return fmt::format("The GPU reset of node {}", name);
    case Kind::kEndpoint:
      break;
  }
  return fmt::format("Variant {}", variant);
}

ClaimedNode NodeClaims::View(const std::string& name, const Entry& e) {
  return ClaimedNode{NodeId(name), e.type, e.ready, e.owner};
}

Status NodeClaims::Upsert(const NodeId& node, std::string_view instance_type, bool ready) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node.value());
  if (it != nodes_.end()) {
    if (it->second.type->id != instance_type) {
      return InvalidArgument(fmt::format("node '{}' is a {}; it cannot become a {}", node.value(),
                                         it->second.type->id, instance_type));
    }
    if (it->second.ready != ready) {
      it->second.ready = ready;
      ++generation_;
    }
    return OkStatus();
  }
  auto type = catalog::FindInstanceType(instance_type);
  if (!type.has_value()) {
    return InvalidArgument(fmt::format("node '{}': {}", node.value(), type.error().message));
  }
  nodes_.emplace(node.value(), Entry{*type, ready, std::nullopt});
  ++generation_;
  return OkStatus();
}

Result<std::vector<NodeId>> NodeClaims::Claim(const Owner& owner, std::string_view instance_type,
                                              int count) {
  if (!catalog::FindInstanceType(instance_type).has_value()) {
    return InvalidArgument(
        fmt::format("instance type '{}' is not in the catalog", std::string(instance_type)));
  }
  std::lock_guard lock(mu_);
  std::vector<Entry*> free;
  std::vector<std::string> names;
  int total = 0;
  int not_ready = 0;
  for (auto& [name, e] : nodes_) {
    if (e.type->id != instance_type) continue;
    ++total;
    if (e.owner) continue;
    if (!e.ready) {
      ++not_ready;
      continue;
    }
    if (static_cast<int>(free.size()) < count) {
      free.push_back(&e);
      names.push_back(name);
    }
  }
  const int have = static_cast<int>(free.size());
  if (have < count && have + not_ready >= count) {
    return Unavailable(fmt::format(
        "{} needs {} x {}; {} free instance{} NotReady (their agents are not reporting)",
        owner.Subject(), count, instance_type, not_ready, not_ready == 1 ? " is" : "s are"));
  }
  if (have < count) {
    return ResourceExhausted(
        fmt::format("{} needs {} x {} instance{}; the fleet has {}, {} free. Missing: {} x {}.",
                    owner.Subject(), count, instance_type, count == 1 ? "" : "s", total, have,
                    count - have, instance_type));
  }
  std::vector<NodeId> out;
  for (int i = 0; i < count; ++i) {
    free[i]->owner = owner;
    out.emplace_back(names[i]);
  }
  if (count > 0) ++generation_;
  return out;
}

Status NodeClaims::ClaimSpecific(const Owner& owner, std::span<const NodeId> ids) {
  std::lock_guard lock(mu_);
  for (const auto& id : ids) {
    auto it = nodes_.find(id.value());
    if (it == nodes_.end()) {
      return NotFound(fmt::format("node '{}' is no longer in the fleet", id.value()));
    }
    if (it->second.owner && *it->second.owner != owner) {
      // Another tenant's endpoint or queue is not named to the caller (docs/security.md).
      const Owner& holder = *it->second.owner;
      const bool same_account = holder.account.empty() || holder.account == owner.account;
      return FailedPrecondition(fmt::format("node '{}' is held by {}", id.value(),
                                            same_account ? holder.Describe() : "another account"));
    }
  }
  for (const auto& id : ids) nodes_.find(id.value())->second.owner = owner;
  if (!ids.empty()) ++generation_;
  return OkStatus();
}

void NodeClaims::Release(const Owner& owner) {
  std::lock_guard lock(mu_);
  for (auto& [name, e] : nodes_) {
    if (e.owner && *e.owner == owner) {
      e.owner.reset();
      ++generation_;
    }
  }
}

void NodeClaims::ReleaseNodes(const Owner& owner, std::span<const NodeId> nodes) {
  std::lock_guard lock(mu_);
  for (const NodeId& id : nodes) {
    auto it = nodes_.find(id.value());
    if (it == nodes_.end() || !it->second.owner || *it->second.owner != owner) continue;
    it->second.owner.reset();
    ++generation_;
  }
}

std::vector<ClaimedNode> NodeClaims::NodesOf(const Owner& owner) const {
  std::lock_guard lock(mu_);
  std::vector<ClaimedNode> out;
  for (const auto& [name, e] : nodes_) {
    if (e.owner && *e.owner == owner) out.push_back(View(name, e));
  }
  return out;
}

std::vector<ClaimedNode> NodeClaims::All() const {
  std::lock_guard lock(mu_);
  std::vector<ClaimedNode> out;
  out.reserve(nodes_.size());
  for (const auto& [name, e] : nodes_) out.push_back(View(name, e));
  return out;
}

std::optional<ClaimedNode> NodeClaims::Find(const NodeId& node) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node.value());
  if (it == nodes_.end()) return std::nullopt;
  return View(it->first, it->second);
}

uint64_t NodeClaims::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

void SyncFromRegistry(const NodeRegistry& registry, NodeClaims& claims) {
  for (const auto& node : registry.Briefs()) {
    Status st = claims.Upsert(node.id, node.instance_type, node.ready);
    if (!st.ok()) spdlog::warn("node {}: {}", node.id.value(), st.error().message);
  }
}

void SyncFromRegistry(const NodeRegistry& registry, NodeClaims& claims,
                      const RegistryChanges& changes) {
  if (changes.everything) return SyncFromRegistry(registry, claims);
  for (const std::string& name : changes.nodes) {
    auto node = registry.Brief(NodeId(name));
    if (!node) continue;
    Status st = claims.Upsert(node->id, node->instance_type, node->ready);
    if (!st.ok()) spdlog::warn("node {}: {}", name, st.error().message);
  }
}

}  // namespace carve::server::nodes
