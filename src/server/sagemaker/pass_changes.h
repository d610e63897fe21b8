// PassChanges: what changed since the service's previous reconcile pass (issue 14).
//
// The parts of a pass (component placement, workload publishing, the route table) use it to
// leave alone what nothing touched, so that the work of a pass grows with what changed and not
// with the fleet: a component scaled by one copy re-reads one record, reconciles one component
// and republishes the desired state of the nodes whose workloads changed.
//
// `everything` is set on the first pass, when a feed overflowed, and on every pass in simulated
// mode (no registry reports changes there); the parts then look at everything, as before.
#pragma once

#include <set>
#include <string>
#include <utility>

#include "server/nodes/node_registry.h"

namespace carve::server::sagemaker {

struct PassChanges {
  using Name = std::pair<std::string, std::string>;  // (account, name)
  bool everything = true;
  std::set<Name> endpoints;              // Endpoint records written or removed since the last pass.
  std::set<Name> components;             // Inference-component records written or removed.
  nodes::RegistryChanges registry;       // Nodes and workloads whose agents reported changes.

  bool EndpointChanged(const std::string& account, const std::string& name) const {
    return everything || endpoints.contains({account, name});
  }
  bool ComponentChanged(const std::string& account, const std::string& name) const {
    return everything || components.contains({account, name});
  }
};

// The component a copy's workload id names ("account/component/copy"); nullopt for an id of
// another kind (a queue task's).
inline std::optional<PassChanges::Name> ComponentOfWorkload(const std::string& id) {
  const size_t a = id.find('/');
  if (a == std::string::npos) return std::nullopt;
  const size_t b = id.find('/', a + 1);
  if (b == std::string::npos || id.find('/', b + 1) != std::string::npos) return std::nullopt;
  return PassChanges::Name{id.substr(0, a), id.substr(a + 1, b - a - 1)};
}

}  // namespace carve::server::sagemaker
