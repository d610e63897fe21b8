// Fleet: the control plane's in-memory picture of its nodes: which endpoint variant holds each
// node, how each GPU is carved into slots, which inference-component copy occupies each slot,
// and how much host CPU and memory the copies take.
//
// A slot is one MIG partition, or one whole GPU on a variant without a partition layout. Every
// GPU of every node of a variant is carved identically (the seed's rule: one layout entry
// describes one accelerator). The durable truth lives in the Store (endpoint records hold their
// nodes, component records hold their copies' placements); on restart the service replays them
// into a fresh Fleet with ClaimNodes/SetCarve/Occupy.
//
// Not thread-safe: the owning service serialises access.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catalog/instance_type.h"
#include "common/ids.h"
#include "common/result.h"
#include "server/fleet/fleet_config.h"

namespace carve::server::fleet {

enum class PlacementStrategy { kSpread, kBinpack };

// Which endpoint variant holds a node.
struct Claim {
  std::string account;
  std::string endpoint;
  std::string variant;
  friend bool operator==(const Claim&, const Claim&) = default;
};

struct Slot {
  std::string type;      // SageMaker partition type ("mig-1g.5gb"); "" for a whole GPU.
  std::string occupant;  // Inference component id ("<account>/<name>"); "" when free.
};

struct GpuState {
  std::vector<Slot> slots;  // In layout order.
};

struct NodeState {
  NodeId id;
  const catalog::InstanceType* type = nullptr;
  std::optional<Claim> claim;
  bool carved = false;          // Slots are valid (the driver finished carving every GPU).
  // Its agent reports (NodeRegistry readiness). A NotReady node keeps its claim and carve, but
  // takes no new claims or copies; the service moves its copies elsewhere.
  bool ready = true;
  std::vector<GpuState> gpus;   // One per GPU of the instance type.
  int64_t cpu_used_milli = 0;   // Host vCPUs taken by copies, in thousandths.
  int64_t memory_used_mib = 0;  // Host memory taken by copies.
};

// What one copy of an inference component needs.
struct CopyRequest {
  std::string occupant;        // "<account>/<inference component>".
  std::string partition_type;  // "" for whole GPUs.
  int devices = 1;             // Whole GPUs per copy when partition_type is "".
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  PlacementStrategy strategy = PlacementStrategy::kSpread;
};

// Where one copy sits; persisted in the component's record.
struct CopyPlacement {
  // Stable for the life of this placement (a rescheduled copy gets a new one): part of the
  // copy's workload id on the node's agent.
  std::string id;
  int index = 0;  // The copy's number within its component ("carve logs IC --copy N").
  NodeId node;
  std::vector<std::pair<int, int>> slots;  // (gpu index, slot index on that GPU).
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  friend bool operator==(const CopyPlacement&, const CopyPlacement&) = default;
};

// A domain outcome, not an error: either a placement or why none fits.
struct PlaceOutcome {
  std::optional<CopyPlacement> placement;
  std::string reason;  // Set when placement is empty: what the copy waits for.
};

class Fleet {
 public:
  // InvalidArgument when a node's instance type is not in the catalog.
  static Result<Fleet> Create(const FleetConfig& config);

  const std::vector<NodeState>& nodes() const { return nodes_; }
  // Adds a node an agent registered (NotReady until SetReady). A node already present keeps
  // its state. InvalidArgument for an instance type not in the catalog.
  Status AddNode(const NodeId& id, std::string_view instance_type, bool ready);
  // Returns whether readiness changed. Unknown nodes are ignored.
  bool SetReady(const NodeId& id, bool ready);
  const NodeState* Find(const NodeId& id) const;

  // Claims `count` free Ready nodes of `instance_type` for `claim`, all or none.
  // ResourceExhausted names what is missing ("needs 2 x ml.p4d.24xlarge; the fleet has 2, 1
  // free"); when enough nodes exist but some are NotReady, Unavailable says so (retry later).
  Result<std::vector<NodeId>> ClaimNodes(const Claim& claim, std::string_view instance_type,
                                         int count);
  // Re-takes specific nodes after a restart. NotFound if a node is no longer in the fleet,
  // FailedPrecondition if another claim holds it. All or none.
  Status ClaimSpecific(const Claim& claim, std::span<const NodeId> ids);
  std::vector<NodeId> NodesOf(std::string_view account, std::string_view endpoint) const;

  // Records that every GPU of `node` now carries `types` (SageMaker names, layout order), or is
  // whole when `types` is empty. Clears occupants. NotFound for an unknown node.
  Status SetCarve(const NodeId& node, std::span<const std::string> types);

  // Frees every node held by the endpoint, with its slots and host resources.
  void ReleaseEndpoint(std::string_view account, std::string_view endpoint);

  // Finds a place for one copy on the carved nodes held by `claim`, honouring the strategy:
  // SPREAD prefers the node with fewest copies of this component, then the emptiest GPU;
  // BINPACK prefers the fullest node and GPU that still fits. Takes the slots and host
  // resources on success.
  PlaceOutcome Place(const Claim& claim, const CopyRequest& request);
  // Takes a known placement (restart). FailedPrecondition if a slot is taken or the host
  // lacks room; NotFound if the node or slot does not exist.
  Status Occupy(const CopyPlacement& placement, std::string_view occupant);
  // Frees a placement's slots and host resources; unknown slots are ignored.
  void Release(const CopyPlacement& placement);

  // GET /v1/fleet: nodes, GPUs, their carve and occupants.
  nlohmann::json ToJson() const;
  // GET /v1/endpoints/{name}/carve: the same, restricted to one endpoint's nodes.
  nlohmann::json EndpointJson(std::string_view account, std::string_view endpoint) const;

 private:
  NodeState* MutableFind(const NodeId& id);
  std::vector<NodeState> nodes_;
};

nlohmann::json PlacementToJson(const CopyPlacement& placement);
Result<CopyPlacement> PlacementFromJson(const nlohmann::json& j);

}  // namespace carve::server::fleet
