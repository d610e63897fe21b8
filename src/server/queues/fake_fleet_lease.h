// FakeFleetLease: an in-memory FleetLease over a fixed list of nodes, for tests.
#pragma once

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "server/nodes/fleet_lease.h"

namespace carve::server::queues {

class FakeFleetLease final : public nodes::FleetLease {
 public:
  explicit FakeFleetLease(std::vector<nodes::LeasedNode> nodes) : nodes_(std::move(nodes)) {}

  Result<std::vector<NodeId>> Claim(const std::string& owner, std::string_view instance_type,
                                    int count) override {
    std::lock_guard lock(mu_);
    std::vector<NodeId> free;
    int of_type = 0;
    for (const auto& n : nodes_) {
      if (n.instance_type != instance_type) continue;
      ++of_type;
      if (owner_.count(n.id.value()) == 0) free.push_back(n.id);
    }
    if (static_cast<int>(free.size()) < count) {
      return ResourceExhausted(fmt::format("needs {} x {}; the fleet has {}, {} free", count,
                                           instance_type, of_type, free.size()));
    }
    free.resize(count);
    for (const auto& id : free) owner_[id.value()] = owner;
    return free;
  }
  Status ClaimSpecific(const std::string& owner, const std::vector<NodeId>& ids) override {
    std::lock_guard lock(mu_);
    for (const auto& id : ids) {
      bool known = false;
      for (const auto& n : nodes_) known = known || n.id == id;
      if (!known) return NotFound("node '" + id.value() + "' is not in the fleet");
      auto it = owner_.find(id.value());
      if (it != owner_.end() && it->second != owner) {
        return FailedPrecondition("node '" + id.value() + "' is held by " + it->second);
      }
    }
    for (const auto& id : ids) owner_[id.value()] = owner;
    return OkStatus();
  }
  void Release(const std::string& owner) override {
    std::lock_guard lock(mu_);
    std::erase_if(owner_, [&](const auto& kv) { return kv.second == owner; });
  }
  std::vector<nodes::LeasedNode> NodesOf(const std::string& owner) const override {
    std::lock_guard lock(mu_);
    std::vector<nodes::LeasedNode> out;
    for (const auto& n : nodes_) {
      auto it = owner_.find(n.id.value());
      if (it != owner_.end() && it->second == owner) out.push_back(n);
    }
    return out;
  }
  std::vector<nodes::LeasedNode> AllNodes() const override { return nodes_; }

 private:
  const std::vector<nodes::LeasedNode> nodes_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> owner_;  // node -> owner, guarded by mu_
};

}  // namespace carve::server::queues
