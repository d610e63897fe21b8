// SageMakerService: the SageMaker control plane behind `POST /` (awsJson1_1). It is assembled
// from explicit parts, each with its own header and tests:
//   - the operation handlers (ops.h): validate a request and record what is wanted in the Store;
//   - EndpointLifecycle: Creating -> claim instances, carve -> InService; Deleting -> gone;
//   - ComponentPlacement: every copy on a partition of its variant's NodePool, the statuses;
//   - WorkloadPublisher (agent mode): desired GPU layouts and copy processes per node, routes.
// A reconcile pass runs those three in that order under one state lock, which the handlers that
// change endpoints and components take too. Models and endpoint configs do not take it (the
// Store's own atomicity decides races), so their creates share group commits.
//
//   Endpoint:  Creating --claim InitialInstanceCount nodes, carve every GPU--> InService
//              Creating --too few free nodes / carve failed--> Failed (FailureReason)
//              InService --UpdateEndpoint (same layout)--> Updating --> InService
//              any --DeleteEndpoint--> Deleting --partitions and nodes released--> (gone)
//   Component: Creating --all desired copies placed and serving--> InService
//              InService --CopyCount changes--> Updating --> InService
//              InService --Specification changes--> Updating (rolling deployment, batch by
//                batch) --> InService on the new one, or rolled back on the old (FailureReason)
//              any --DeleteInferenceComponent--> Deleting --copies released--> (gone)
//
// Threading: Handle() is thread-safe. Start() runs the reconciler on a background thread;
// tests call ReconcileOnce() and WaitForCarves() instead.
// Durability: a request is answered only after its Store commit returned. Recover() rebuilds the
// parts' memory from the Store (migrating records older versions wrote), and the reconciler
// resumes in-flight transitions (an endpoint left Creating is carved again; carving is
// idempotent).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "http/api.h"
#include "server/nodes/node_claims.h"
#include "server/nodes/node_driver.h"
#include "server/nodes/node_registry.h"
#include "server/reconciler_loop.h"
#include "server/sagemaker/component_placement.h"
#include "server/sagemaker/endpoint_lifecycle.h"
#include "server/sagemaker/op_context.h"
#include "server/sagemaker/pass_changes.h"
#include "server/sagemaker/route_table.h"
#include "server/sagemaker/runtimes.h"
#include "server/sagemaker/workload_publisher.h"
#include "store/store.h"

namespace carve::server::sagemaker {

struct ServiceOptions {
  std::string region = "us-east-1";  // Goes into ARNs.
  const Clock* clock = nullptr;      // nullptr: SystemClock.
  // How often the background reconciler runs when nothing wakes it.
  std::chrono::milliseconds reconcile_interval{500};
  // Agent mode: nodes come from the registry, copies run as processes on their agents and count
  // as current only once running (healthy), and copies on NotReady nodes are rescheduled.
  // nullptr: simulated mode, where the nodes are NodeClaims' own and a placed copy counts as
  // running.
  nodes::NodeRegistry* registry = nullptr;
  RuntimeCatalog runtimes = BuiltinRuntimes(false);
  // Models, endpoint configurations, endpoints and inference components one account may hold,
  // each (docs/api.md, Limits).
  int max_records_per_kind = kDefaultMaxRecordsPerKind;
  // The operator's model roots: a file:///path or /path ModelDataUrl must resolve inside one
  // (protocol/launch_inputs.h); empty: no such ModelDataUrl is accepted.
  std::vector<std::string> model_roots;
};

class SageMakerService {
 public:
  // All references must outlive the service. `claims` is shared with the queues.
  SageMakerService(store::Store& store, nodes::NodeClaims& claims, nodes::NodeDriver& driver,
                   ServiceOptions options = {});
  ~SageMakerService();  // Stop()s.
  SageMakerService(const SageMakerService&) = delete;
  SageMakerService& operator=(const SageMakerService&) = delete;

  // Replays the Store into the parts. Call once, before Start() and before serving.
  Status Recover();

  // One SageMaker operation. Never throws; every failure is an AWS error response.
  http::ApiResponse Handle(const http::ApiRequest& request);

  // Background reconciler. Stop() joins it and the carve workers; idempotent.
  void Start();
  void Stop();
  // One synchronous reconcile pass.
  void ReconcileOnce();
  // Blocks until no carve worker is running (tests).
  void WaitForCarves();

  // Native views: GET /v1/fleet (the caller's account's nodes in full, others' nodes without
  // what runs on them) and GET /v1/endpoints/{name}/carve (NotFound for an unknown endpoint).
  nlohmann::json FleetJson(const std::string& account) const;
  Result<nlohmann::json> EndpointCarveJson(const std::string& account,
                                           const std::string& endpoint) const;
  // GET /v1/ui/endpoints's part: every endpoint of the account as DescribeEndpoint answers it,
  // with "EndpointConfig" (DescribeEndpointConfig's answer, null once deleted) and "Nodes" (its
  // instances as GET /v1/fleet draws them); every inference component as
  // DescribeInferenceComponent answers it; and "Unreadable": records that could not be
  // described ({"kind", "name", "error"}), so a damaged record shows instead of vanishing.
  // One request for what the dashboard's Endpoints page drew with 2 + 2N signed calls.
  Result<nlohmann::json> EndpointsViewJson(const std::string& account) const;
  // GET /v1/inference-components/{name}/copies: every copy, the specification version it runs
  // and its state, and the deployment in progress (NotFound for an unknown component).
  Result<nlohmann::json> ComponentCopiesJson(const std::string& account,
                                             const std::string& component) const;

  // GET /v1/fragmentation's part: for every carved variant of the account, the metric of each
  // request shape its components use.
  std::vector<nodes::ShapeFragmentation> Fragmentation(const std::string& account) const;

  // Gauges for /metrics, computed under the state lock.
  struct Snapshot {
    // (gpu model, profile) -> {total, used}; profile "whole" for uncarved GPUs.
    std::map<std::pair<std::string, std::string>, std::pair<int, int>> partitions;
    // (account, component) -> {desired, current}.
    std::map<std::pair<std::string, std::string>, std::pair<int, int>> copies;
    std::map<std::string, int> endpoints_by_status;
  };
  Snapshot TakeSnapshot() const;

  // What the last reconcile pass did (issue 14): records it read from the Store, components it
  // reconciled, what it handed the agents and the router, and how long it took.
  struct PassStats {
    bool everything = false;  // It looked at everything (first pass, simulated mode, overflow).
    int64_t records_read = 0;
    int components_reconciled = 0;
    WorkloadPublisher::Work published;
    double seconds = 0;
  };
  PassStats LastPass() const;

  // The runtime router's view: which copies of which component are in rotation (agent mode).
  const RouteTable& routes() const { return routes_; }

 private:
  Result<std::vector<EndpointEntry>> LoadEndpoints() const;
  Result<std::vector<ComponentEntry>> LoadComponents() const;
  // Brings endpoints_ and components_ up to the Store and adds what changed to `changes`: every
  // record on the first call (or after the feed overflowed or a read failed), else only those
  // the Store's change feed names. Agent mode also takes the registry's changes and applies
  // them to NodeClaims.
  Status Refresh(PassChanges& changes);
  Status ReloadAll();
  // ManagedInstanceScaling: an InService variant with copies waiting and a free Ready instance
  // of its type grows by one, up to its maximum; one with none waiting and an instance that
  // holds no copy shrinks by one, down to its minimum (IDLE_RELEASE). The change is recorded as
  // an update (Updating), which EndpointLifecycle carries out.
  void ScaleManagedVariants(std::vector<EndpointEntry>& endpoints);
  struct PoolIndex;
  static const PoolIndex& IndexOf(const nodes::NodePool& pool,
                                  std::map<const nodes::NodePool*, PoolIndex>& cache);
  nlohmann::json NodeJson(const nodes::ClaimedNode& node, const std::string& account,
                          std::map<const nodes::NodePool*, PoolIndex>& cache) const;

  store::Store& store_;
  nodes::NodeClaims& claims_;
  const ServiceOptions options_;
  const Clock& clock_;
  // Serialises endpoint and component changes (handlers and passes) and guards the parts.
  mutable std::mutex mu_;
  int registry_cursor_ = -1;  // NodeRegistry::Subscribe, taken by the first Refresh (mu_)
  // Endpoints and inference components as of the last pass, ordered by (account, name), kept
  // parsed so a pass re-reads only what was written since (issue 14). Guarded by mu_.
  std::vector<EndpointEntry> endpoints_;
  std::vector<ComponentEntry> components_;
  const int feed_;               // Store::Watch of endpoints and components.
  bool reload_all_ = true;       // The next Refresh re-lists (mu_).
  std::set<store::Key> unread_;  // Changed keys a failed read left for the next Refresh (mu_).
  int64_t records_read_ = 0;     // By Refresh, ever (mu_).
  PassStats last_pass_;          // (mu_)
  RouteTable routes_;         // Rebuilt after every pass; has its own lock.
  OpContext ops_;
  EndpointLifecycle lifecycle_;
  ComponentPlacement placement_;
  std::optional<WorkloadPublisher> publisher_;  // Agent mode only.
  ReconcilerLoop loop_;
  nodes::NodeRegistry::Subscription wake_;  // Agent mode only. Last: detached first.
};

}  // namespace carve::server::sagemaker
