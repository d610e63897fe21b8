// EndpointLifecycle: an endpoint's way from Creating to InService, and from Deleting to gone.
//
//   Creating  claims InitialInstanceCount Ready instances of each variant's type (NodeClaims),
//             records them in the endpoint, then carves every GPU of every instance with the
//             layout its config fixed: a carve worker, outside the state lock, nodes in parallel
//             and each node's GPUs in turn, as one host's driver would. -> InService, or Failed
//             with the driver's reason and the instances released.
//             Too few free instances: Failed, naming what is missing. Enough, but some NotReady:
//             it stays Creating and tries again on the next pass.
//   Updating  the instance counts UpdateEndpoint or UpdateEndpointWeightsAndCapacities recorded:
//             a variant short of instances claims more and carves them with its layout (a
//             worker); they join the record only once carved. Too few free: the variant keeps
//             what it has and FailureReason says why. A variant with too many marks the ones
//             holding the fewest copies as draining: no copy is placed there and theirs are
//             placed again on the others (ComponentPlacement); once none is left, their GPUs
//             are reset as a delete resets them and they are released. Then -> InService, the
//             desired weights in force.
//   Deleting  every GPU of every Ready instance carved back to whole (a worker, like the carve),
//             waiting for the agents to confirm it; then one transaction removes the record and
//             writes a NodeReset record for each instance that was NotReady (or whose agent
//             refused the reset), and the instances are released. A node with a NodeReset is
//             held by a reset claim (Owner::Reset) until its agent is Ready again and reports
//             every GPU whole; then the record goes and the node is free. A node that goes
//             NotReady while Deleting waits (Unavailable) makes the next pass try again
//             without it.
// Carving is idempotent, so an endpoint left Creating or Deleting by a restart is carved again,
// and a pending reset survives a restart in its record.
//
// Threading: Recover and Reconcile run with the service's state lock held; a worker takes that
// lock only to record its outcome, then wakes the reconciler.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "server/nodes/node_claims.h"
#include "server/nodes/node_driver.h"
#include "server/sagemaker/component_placement.h"
#include "store/store.h"

namespace carve::server::sagemaker {

class EndpointLifecycle {
 public:
  // All references must outlive this. `notify` wakes the reconciler.
  EndpointLifecycle(store::Store& store, nodes::NodeClaims& claims, nodes::NodeDriver& driver,
                    const Clock& clock, std::mutex& state_mu, std::function<void()> notify);
  ~EndpointLifecycle();  // Abort() and Wait().
  EndpointLifecycle(const EndpointLifecycle&) = delete;
  EndpointLifecycle& operator=(const EndpointLifecycle&) = delete;

  // Claims again the instances each endpoint recorded, and the nodes of every pending reset.
  // An endpoint whose instances are gone or held by another owner keeps its record (and is
  // logged); it is not failed on a restart. Errors: the store's, listing the resets.
  Status Recover(std::span<const EndpointEntry> endpoints);

  // One pass over every endpoint's transition, and over the pending resets. Entries are updated
  // to what was committed; endpoints are removed by their delete workers, not here.
  void Reconcile(std::vector<EndpointEntry>& endpoints);

  // How many copies are placed on each node of a variant (nodes with none absent); the service
  // wires it to ComponentPlacement (a draining node is released only when none is left).
  // Default: none anywhere.
  using CopiesPerNode = std::function<std::map<std::string, size_t>(const nodes::Owner&)>;
  void set_copies_per_node(CopiesPerNode f) { copies_per_node_ = std::move(f); }

  // Nodes whose GPUs still wait to be reset for a deleted endpoint, in name order.
  std::vector<NodeId> PendingResets() const;  // Caller holds the state lock.

  // Workers give up between steps; their endpoints stay Creating or Deleting (resumed on
  // restart).
  void Abort();
  // Joins every worker that has finished or been aborted.
  void Wait();

  // The store kind of a pending reset: name = node id, account "", body {"gpus", "endpoint"}.
  static constexpr std::string_view kNodeReset = "NodeReset";
  // How long a reset the agent refused (or that timed out) waits before it is tried again.
  static constexpr std::chrono::seconds kResetRetry{30};

 private:
  using Key = std::pair<std::string, std::string>;  // (account, endpoint)
  struct PendingReset {
    int gpus = 0;
    std::string endpoint;  // "<account>/<name>", for messages.
    int64_t version = 0;   // Of its record.
    std::chrono::steady_clock::time_point next_try{};
  };
  struct Growth {  // Instances claimed for a variant, to carve before they join it.
    std::string variant;
    std::vector<NodeId> nodes;
    int gpus = 0;
    core::Layout layout;
  };
  struct Drain {  // A variant's draining instances, empty of copies, to reset and release.
    std::string variant;
    std::vector<std::string> ready;
    std::vector<std::string> not_ready;
    int gpus = 0;
  };
  void Claim(EndpointEntry& entry);
  void Update(EndpointEntry& entry);
  void Resize(Key key, std::vector<Growth> grows, std::vector<Drain> drains);
  // Commits `endpoint_write` with a NodeReset record for each of `nodes` (node -> GPU count)
  // and returns every record written; once it succeeds, HoldForReset claims each node for its
  // reset (Owner::Reset). Resets beyond one commit's max_commit_keys() go first, in commits of
  // their own: a failure or a crash between leaves a reset too many, never one missing.
  Result<std::vector<store::Record>> CommitWithResets(store::Mutation endpoint_write,
                                                      const std::map<std::string, int>& nodes,
                                                      const std::string& endpoint);
  void HoldForReset(std::span<const store::Record> written, const std::map<std::string, int>& nodes,
                    const std::string& endpoint, bool refused);
  void StartWorker(Key key, void (EndpointLifecycle::*work)(Key));
  void Carve(Key key);
  void Uncarve(Key key);
  void StartResets();
  void ResetNode(const std::string& node, int gpus);
  void Fail(EndpointRecord& ep, std::string reason);

  store::Store& store_;
  nodes::NodeClaims& claims_;
  nodes::NodeDriver& driver_;
  const Clock& clock_;
  std::mutex& state_mu_;
  const std::function<void()> notify_;
  std::set<Key> carving_;             // Endpoints with a worker. Guarded by state_mu_.
  std::map<std::string, PendingReset> resets_;  // By node. Guarded by state_mu_.
  std::set<std::string> resetting_;   // Nodes with a reset worker. Guarded by state_mu_.
  std::vector<std::thread> workers_;  // Guarded by state_mu_.
  std::atomic<bool> abort_{false};
  CopiesPerNode copies_per_node_ = [](const nodes::Owner&) {
    return std::map<std::string, size_t>{};
  };
};

}  // namespace carve::server::sagemaker
