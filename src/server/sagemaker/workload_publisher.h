// WorkloadPublisher: turns what the Store says into what the agents and the router act on.
//   - Each carved instance's desired GPU layouts: its variant's layout on every GPU (idempotent:
//     an unchanged entry bumps nothing; after a server restart this re-teaches the agents).
//   - Each node's desired "sagemaker" workloads: one process per placed copy, bound to its
//     partition (or GPUs), with the model's container, environment and host limits.
//   - The runtime route table: per endpoint, per component, the copies that serve (running,
//     healthy, on a Ready node).
// It runs at the end of every reconcile pass, with the service's state lock held. Agent mode
// only: without a node registry there is nothing to publish.
#pragma once

#include <span>
#include <string>

#include "server/nodes/node_registry.h"
#include "server/sagemaker/component_placement.h"
#include "server/sagemaker/route_table.h"
#include "server/sagemaker/runtimes.h"
#include "store/store.h"

namespace carve::server::sagemaker {

class WorkloadPublisher {
 public:
  // All references must outlive this.
  WorkloadPublisher(store::Store& store, nodes::NodeRegistry& registry,
                    const RuntimeCatalog& runtimes, RouteTable& routes);

  void Publish(std::span<const EndpointEntry> endpoints, std::span<const ComponentEntry> components,
               const ComponentPlacement& placement);

 private:
  store::Store& store_;
  nodes::NodeRegistry& registry_;
  const RuntimeCatalog& runtimes_;
  RouteTable& routes_;
};

}  // namespace carve::server::sagemaker
