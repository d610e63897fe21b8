// RouteTable: the runtime router's read-mostly view of which copies serve which inference
// component. The service updates it after every reconcile pass, for the endpoints whose records,
// copies or copies' reports changed (and a pass follows every agent report that changes a copy's
// state), so a copy joins the rotation once its /ping answers and
// leaves it when its agent reports it unhealthy, dead or its node NotReady.
//
// Resolve answers with SageMaker runtime semantics: NotFound for an endpoint the account does
// not have; InvalidArgument when the endpoint has inference components and none (or an unknown
// one) is named; FailedPrecondition when the endpoint is not InService. An endpoint with no
// components is served by its variant's own copies (none in carve: models run as components).
// Thread-safe (a shared mutex: many concurrent resolves, one writer per pass).
#pragma once

#include <chrono>
#include <map>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "server/sagemaker/routing_strategy.h"
#include "server/sagemaker/statuses.h"

namespace carve::server::sagemaker {

struct RouteCopy {
  std::string id;       // workload id on its node
  std::string address;  // "127.0.0.1:PORT"
  friend bool operator==(const RouteCopy&, const RouteCopy&) = default;
};

struct RouteEndpoint {
  EndpointStatus status = EndpointStatus::kCreating;
  std::string variant;
  RoutingStrategy strategy = RoutingStrategy::kLeastOutstandingRequests;
  std::chrono::milliseconds timeout{60000};
  std::map<std::string, std::vector<RouteCopy>> components;  // name -> copies in rotation
};

struct ResolvedRoute {
  std::string variant;
  std::string component;
  RoutingStrategy strategy = RoutingStrategy::kLeastOutstandingRequests;
  std::chrono::milliseconds timeout{60000};
  std::vector<RouteCopy> copies;
};

class RouteTable {
 public:
  using Key = std::pair<std::string, std::string>;  // (account, endpoint)
  void Replace(std::map<Key, RouteEndpoint> table);
  // One endpoint's entry, for a pass that changed only some.
  void Set(const Key& key, RouteEndpoint endpoint);
  void Erase(const Key& key);
  // `sole_if_unnamed`: an empty `component` on an endpoint with exactly one means that one (the
  // OpenAI route's selector); otherwise an empty name is refused as SageMaker refuses it.
  Result<ResolvedRoute> Resolve(const std::string& account, const std::string& endpoint,
                                const std::string& component, bool sole_if_unnamed = false) const;

 private:
  mutable std::shared_mutex mu_;
  std::map<Key, RouteEndpoint> table_;
};

}  // namespace carve::server::sagemaker
