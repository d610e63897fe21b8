// NodeClaims: which node belongs to which owner. An owner is an endpoint's production variant
// (SageMaker copies), an mGPU queue (job tasks), or a GPU reset (a deleted endpoint's node that
// was NotReady when the endpoint went: it is held until its agent reports every GPU whole). A
// node has at most one owner, so an endpoint and a queue never share a node, and two endpoints
// never share one either.
//
// The nodes themselves come from the node registry (agents register them; NodeClaims is told
// with Upsert) or, for a control plane without agents, from its configuration. Claims are
// all-or-none and live only in memory: every owner persists the nodes it holds in its own records
// (an endpoint record's variant, a queue record) and claims exactly those again with
// ClaimSpecific after a restart.
//
// Errors: InvalidArgument (an instance type the catalog does not know), ResourceExhausted (too
// few free nodes of the type: the message names what is missing), Unavailable (enough nodes exist
// but some of them are NotReady: retry later), NotFound / FailedPrecondition from ClaimSpecific
// (a node gone from the fleet / held by another owner).
// Thread-safe: one mutex guards all state; no call blocks or calls out.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/instance_type.h"
#include "common/ids.h"
#include "common/result.h"

namespace carve::server::nodes {

struct Owner {
  enum class Kind { kEndpoint, kQueue, kReset };
  Kind kind = Kind::kEndpoint;
  std::string account;  // "" for a reset: it belongs to the fleet, not to an account.
  std::string name;     // The endpoint's or the queue's name; the node's for a reset.
  std::string variant;  // kEndpoint: the production variant; "" otherwise.

  static Owner Endpoint(std::string account, std::string endpoint, std::string variant);
  static Owner Queue(std::string account, std::string queue);
  static Owner Reset(const NodeId& node);
  // "variant AllTraffic of endpoint e" / "queue q" / "the GPU reset of node n": how messages
  // name the owner.
  std::string Describe() const;
  // "Variant AllTraffic" / "Queue q" / "The GPU reset of node n": the owner as the subject of a
  // sentence about capacity.
  std::string Subject() const;
  friend auto operator<=>(const Owner&, const Owner&) = default;
};

struct ClaimedNode {
  NodeId id;
  const catalog::InstanceType* type = nullptr;  // Never null.
  bool ready = false;                           // Its agent reports (registry readiness).
  std::optional<Owner> owner;
};

class NodeClaims {
 public:
  // Adds a node, or updates a known node's readiness (its instance type never changes; a
  // different one is InvalidArgument). InvalidArgument for a type the catalog does not know.
  Status Upsert(const NodeId& node, std::string_view instance_type, bool ready);

  // Claims `count` free Ready nodes of `instance_type` for `owner`, all or none, in name order.
  Result<std::vector<NodeId>> Claim(const Owner& owner, std::string_view instance_type, int count);
  // Claims exactly these nodes (after a restart, or nodes named by the user). All or none; nodes
  // the owner holds already count as claimed.
  Status ClaimSpecific(const Owner& owner, std::span<const NodeId> nodes);
  // Frees every node the owner holds.
  void Release(const Owner& owner);
  // Releases these nodes of `owner` (others' nodes are left alone).
  void ReleaseNodes(const Owner& owner, std::span<const NodeId> nodes);

  std::vector<ClaimedNode> NodesOf(const Owner& owner) const;  // In name order.
  std::vector<ClaimedNode> All() const;                        // In name order.
  std::optional<ClaimedNode> Find(const NodeId& node) const;
  // Bumped by every change (a node added, readiness, a claim, a release), so a caller can tell
  // cheaply whether what it derived from the claims is still current.
  uint64_t generation() const;

 private:
  struct Entry {
    const catalog::InstanceType* type = nullptr;
    bool ready = false;
    std::optional<Owner> owner;
  };
  static ClaimedNode View(const std::string& name, const Entry& e);

  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> nodes_;  // Guarded by mu_.
  uint64_t generation_ = 0;                          // Guarded by mu_.
};

class NodeRegistry;
struct RegistryChanges;
// Tells `claims` every node the registry knows and whether it is Ready: what each controller's
// pass does before it claims or places. A node the registry knows with an instance type the
// catalog does not is logged and left out.
void SyncFromRegistry(const NodeRegistry& registry, NodeClaims& claims);
// The same for only what changed (NodeRegistry::TakeChanges): a pass at thousands of nodes
// touches the nodes that registered or changed readiness, not all.
void SyncFromRegistry(const NodeRegistry& registry, NodeClaims& claims,
                      const RegistryChanges& changes);

}  // namespace carve::server::nodes
