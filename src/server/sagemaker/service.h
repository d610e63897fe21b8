// SageMakerService: the SageMaker control plane behind `POST /` (awsJson1_1). It validates each
// request, keeps every object in the Store, and drives endpoints and inference components
// through their lifecycles on the Fleet:
//
//   Endpoint:  Creating --claim InitialInstanceCount nodes, carve every GPU--> InService
//              Creating --too few free nodes / carve failed--> Failed (FailureReason)
//              InService --UpdateEndpoint (same layout)--> Updating --> InService
//              any --DeleteEndpoint--> Deleting --partitions and nodes released--> (gone)
//   Component: Creating --all desired copies placed--> InService
//              InService --CopyCount changes--> Updating --> InService
//              Copies that do not fit wait; StatusMessage says for what. They are placed as soon
//              as room frees (a component deleted, a CopyCount lowered, an endpoint carved).
//
// Threading: Handle() is thread-safe and may run on many HTTP worker threads. Endpoint and
// component state changes are serialised by one mutex; models and endpoint configs are not
// (the Store's own atomicity decides races). Start() runs the reconciler on a background thread;
// tests call ReconcileOnce() and WaitForCarves() instead.
//
// Durability: a request is answered only after its Store commit returned. On restart Recover()
// rebuilds the fleet picture from the Store, and the reconciler resumes in-flight transitions
// (an endpoint left Creating is carved again; carving is idempotent).
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "server/api.h"
#include "server/fleet/fleet.h"
#include "server/fleet/node_driver.h"
#include "server/nodes/fleet_lease.h"
#include "server/nodes/node_registry.h"
#include "server/sagemaker/route_table.h"
#include "server/sagemaker/runtimes.h"
#include "store/store.h"

namespace carve::server::sagemaker {

struct ServiceOptions {
  std::string region = "us-east-1";  // Goes into ARNs.
  const Clock* clock = nullptr;      // nullptr: SystemClock.
  // How often the background reconciler runs when nothing wakes it.
  std::chrono::milliseconds reconcile_interval{500};
  // Agent mode: nodes come from the registry, copies run as processes on their agents and count
  // as current only once running (healthy), and copies on NotReady nodes are rescheduled.
  // nullptr: simulated mode, where a placed copy counts as running.
  nodes::NodeRegistry* registry = nullptr;
  RuntimeCatalog runtimes = BuiltinRuntimes(false);
  std::string carve_binary;  // absolute path of the carve executable ({carve} in runtimes)
};

class SageMakerService final : public nodes::FleetLease {
 public:
  // `store` and `driver` must outlive the service.
  SageMakerService(store::Store& store, fleet::Fleet fleet, fleet::NodeDriver& driver,
                   ServiceOptions options = {});
  ~SageMakerService() override;  // Stop()s.
  SageMakerService(const SageMakerService&) = delete;
  SageMakerService& operator=(const SageMakerService&) = delete;

  // Replays the Store into the fleet. Call once, before Start() and before serving.
  Status Recover();

  // One SageMaker operation. Never throws; every failure is an AWS error response.
  ApiResponse Handle(const ApiRequest& request);

  // Background reconciler (and carve workers). Stop() joins them; idempotent.
  void Start();
  void Stop();

  // One synchronous reconcile pass: claims and starts carving Creating endpoints, finishes
  // Updating/Deleting ones, places or removes component copies.
  void ReconcileOnce();
  // Blocks until no carve worker is running (tests).
  void WaitForCarves();

  // Native views: GET /v1/fleet and GET /v1/endpoints/{name}/carve (NotFound for an unknown
  // endpoint of that account).
  nlohmann::json FleetJson() const;
  Result<nlohmann::json> EndpointCarveJson(const std::string& account,
                                           const std::string& endpoint) const;

  // Gauges for /metrics, computed under the state lock.
  struct Snapshot {
    // (gpu model, profile) -> {total, used}; profile "whole" for uncarved GPUs.
    std::map<std::pair<std::string, std::string>, std::pair<int, int>> partitions;
    // (account, component) -> {desired, current}.
    std::map<std::pair<std::string, std::string>, std::pair<int, int>> copies;
    std::map<std::string, int> endpoints_by_status;
  };
  Snapshot TakeSnapshot();

  // The runtime router's view: which copies of which component are in rotation (agent mode).
  const RouteTable& routes() const { return routes_; }

  // FleetLease: whole nodes for mGPU queues (claims with account "" and endpoint = owner).
  Result<std::vector<NodeId>> Claim(const std::string& owner, std::string_view instance_type,
                                    int count) override;
  Status ClaimSpecific(const std::string& owner, const std::vector<NodeId>& nodes) override;
  void Release(const std::string& owner) override;
  std::vector<nodes::LeasedNode> NodesOf(const std::string& owner) const override;
  std::vector<nodes::LeasedNode> AllNodes() const override;

  class Ops;  // The handlers (one file per resource) reach state through this.

 private:
  friend class Ops;
  void Notify();
  void Loop();
  void StartCarve(const std::string& account, const std::string& endpoint);
  void CarveWorker(std::string account, std::string endpoint);

  store::Store& store_;
  fleet::NodeDriver& driver_;
  const ServiceOptions options_;
  const Clock& clock_;

  // Serialises endpoint/component state changes and guards the four members below.
  mutable std::mutex mu_;
  fleet::Fleet fleet_;
  std::set<std::pair<std::string, std::string>> carving_;  // (account, endpoint) being carved.
  std::vector<std::thread> workers_;                       // Carve workers to join.

  std::mutex cv_mu_;  // Guards wake_, stopping_ and loop_ (never held with mu_ inside it).
  std::condition_variable cv_;
  bool wake_ = false;
  bool stopping_ = false;
  std::thread loop_;
  std::atomic<bool> abort_carves_{false};  // Set by Stop(): carve workers give up between GPUs.
  RouteTable routes_;  // Rebuilt after every reconcile pass; has its own lock.
};

}  // namespace carve::server::sagemaker
