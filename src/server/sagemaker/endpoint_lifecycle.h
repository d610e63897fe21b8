// EndpointLifecycle: an endpoint's way from Creating to InService, and from Deleting to gone.
//
//   Creating  claims InitialInstanceCount Ready instances of each variant's type (NodeClaims),
//             records them in the endpoint, then carves every GPU of every instance with the
//             layout its config fixed: a carve worker, outside the state lock, nodes in parallel
//             and each node's GPUs in turn, as one host's driver would. -> InService, or Failed
//             with the driver's reason and the instances released.
//             Too few free instances: Failed, naming what is missing. Enough, but some NotReady:
//             it stays Creating and tries again on the next pass.
//   Updating  -> InService (UpdateEndpoint recorded the new config).
//   Deleting  every GPU asked back to whole, the record removed, then the instances released.
// Carving is idempotent, so an endpoint left Creating by a restart is carved again.
//
// Threading: Recover and Reconcile run with the service's state lock held; a carve worker takes
// that lock only to record its outcome, then wakes the reconciler.
#pragma once

#include <atomic>
#include <functional>
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

  // Claims again the instances each endpoint recorded. An endpoint whose instances are gone or
  // held by another owner keeps its record (and is logged); it is not failed on a restart.
  void Recover(std::span<const EndpointEntry> endpoints);

  // One pass over every endpoint's transition. Entries are updated to what was committed, and
  // removed endpoints are erased.
  void Reconcile(std::vector<EndpointEntry>& endpoints);

  // Carve workers give up between GPUs; their endpoints stay Creating (resumed on restart).
  void Abort();
  // Joins every carve worker that has finished or been aborted.
  void Wait();

 private:
  using Key = std::pair<std::string, std::string>;  // (account, endpoint)
  void Claim(EndpointEntry& entry);
  void StartCarve(const EndpointEntry& entry);
  void Carve(Key key);
  void Delete(EndpointEntry& entry, bool& removed);
  void Fail(EndpointRecord& ep, std::string reason);

  store::Store& store_;
  nodes::NodeClaims& claims_;
  nodes::NodeDriver& driver_;
  const Clock& clock_;
  std::mutex& state_mu_;
  const std::function<void()> notify_;
  std::set<Key> carving_;             // Guarded by state_mu_.
  std::vector<std::thread> workers_;  // Guarded by state_mu_.
  std::atomic<bool> abort_{false};
};

}  // namespace carve::server::sagemaker
