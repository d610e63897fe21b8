// WorkloadPublisher: turns what the Store says into what the agents and the router act on.
//   - Each carved instance's desired GPU layouts: its variant's layout on every GPU (idempotent:
//     an unchanged entry bumps nothing; after a server restart this re-teaches the agents).
//   - Each node's desired "sagemaker" workloads: one process per placed copy, bound to its
//     partition (or GPUs), with the model's container, environment and host limits.
//   - The runtime route table: per endpoint, per component, the copies that serve (running,
//     healthy, on a Ready node).
// It runs at the end of every reconcile pass, with the service's state lock held. Agent mode
// only: without a node registry there is nothing to publish.
//
// Incremental (issue 14): it keeps each component's part of the desired state as last
// published, keyed by the versions it was built from (the component's record, its endpoint's,
// and its copies' generation). A pass rebuilds only the components whose key moved (or whose
// account's models changed), hands the registry only the nodes whose union of workloads may
// have changed, re-asks for an endpoint's GPU layouts only when its record changed, and
// rebuilds the routes only of endpoints whose records, copies, copies' reports or nodes
// changed. `changes.everything` (the first pass after a start) publishes everything, which
// after a server restart re-teaches the agents.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "server/nodes/node_registry.h"
#include "server/sagemaker/component_placement.h"
#include "server/sagemaker/pass_changes.h"
#include "server/sagemaker/route_table.h"
#include "server/sagemaker/runtimes.h"
#include "store/store.h"

namespace carve::server::sagemaker {

// The container a copy runs: the component's own Container wins over its model's
// PrimaryContainer (or first of Containers).
struct ContainerSpec {
  std::string image;
  std::string model_data;
  std::map<std::string, std::string> environment;
};

// What one copy's process is, as a pure plan: its container (the model's as the component kept
// it, under the specification's own), the runtime that serves that image in-process (nullptr: the
// image runs as a container), the copy's partition or GPUs and host limits, and the variables a
// copy reads. The id is the caller's (the workload id of the copy).
struct CopyWorkloadInputs {
  const ComponentRecord& component;
  const CopyRecord& copy;
  const ContainerSpec& container;
  const Runtime* runtime;
  const std::string& target;  // "a100-40gb:mig-3g.20gb": CARVE_TARGET unless the model sets it.
  const std::vector<std::string>& model_roots;
};
protocol::WorkloadDesired PlanCopyWorkload(const CopyWorkloadInputs& in);

class WorkloadPublisher {
 public:
  // All references must outlive this. It reads no Store: what a copy runs is in its records.
  WorkloadPublisher(nodes::NodeRegistry& registry, const RuntimeCatalog& runtimes,
                    RouteTable& routes, std::vector<std::string> model_roots = {});

  // What one Publish redid.
  struct Work {
    int components = 0;  // rebuilt
    int nodes = 0;       // whose workloads went to the registry
    int layouts = 0;     // endpoints whose GPU layouts went to the registry
    int routes = 0;      // endpoints whose routes were rebuilt
  };
  Work Publish(std::span<const EndpointEntry> endpoints, std::span<const ComponentEntry> components,
               const ComponentPlacement& placement, const PassChanges& changes);

 private:
  using RecordName = PassChanges::Name;  // (account, name)
  // One component's part of the desired state.
  struct Published {
    int64_t component_version = 0;
    int64_t endpoint_version = 0;  // 0: its endpoint does not exist
    uint64_t copies_generation = 0;
    std::string endpoint;
    std::string partition_type;
    std::map<std::string, std::vector<protocol::WorkloadDesired>> per_node;
    struct Copy {
      std::string workload;  // its id
      std::string node;
      int64_t version = 0;  // of its copy record
    };
    std::vector<Copy> copies;  // By copy index.
  };

  using EndpointIndex = std::map<RecordName, const EndpointEntry*>;
  static const EndpointEntry* EndpointOf(const EndpointIndex& by_name, const std::string& account,
                                         const std::string& name);
  void PublishLayouts(const EndpointEntry& e);
  // Rebuilds the components whose inputs moved and forgets those gone, adding the nodes whose
  // workloads may change and the endpoints whose routes may; returns how many it rebuilt.
  int RebuildComponents(const EndpointIndex& by_name, std::span<const ComponentEntry> components,
                        const ComponentPlacement& placement, const PassChanges& changes,
                        std::set<std::string>& nodes, std::set<RecordName>& routes);
  // Hands the registry each of `nodes`' workloads (and, after `everything`, drops the others').
  void PublishNodes(const std::set<std::string>& nodes, bool everything);
  // Rebuilds the routes of `routes` and of the endpoints whose copies' reports or nodes changed
  // (all of them when the registry or the pass says everything); returns how many.
  int PublishRoutes(const EndpointIndex& by_name, std::span<const EndpointEntry> endpoints,
                    std::span<const ComponentEntry> components, const PassChanges& changes,
                    std::set<RecordName> routes);
  // The component's part now. A copy whose record is as `old` had it keeps its workload (moved
  // out of `old`) unless what every copy is built from changed (the endpoint or the partition
  // type); the others are planned again (PlanCopyWorkload). The nodes of copies built, moved or
  // gone go into `touched`.
  Published Build(const EndpointEntry* ep, const ComponentEntry& entry,
                  const ComponentPlacement& placement, Published* old,
                  std::set<std::string>& touched) const;
  RouteEndpoint RouteOf(const EndpointEntry& e, std::span<const ComponentEntry> components) const;

  nodes::NodeRegistry& registry_;
  const RuntimeCatalog& runtimes_;
  RouteTable& routes_;
  const std::vector<std::string> model_roots_;  // sent with each copy for the agent's check
  std::map<RecordName, Published> published_;
  std::map<std::string, std::set<RecordName>> on_node_;  // Node -> components with workloads there.
};

}  // namespace carve::server::sagemaker
