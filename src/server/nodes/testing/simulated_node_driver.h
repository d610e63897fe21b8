// Test support for the services' unit tests, which run without agents.
//
// SimulatedNodeDriver: a NodeDriver for nodes that exist only in the control plane. Each carve
// takes a configurable time per GPU (default 2 s, like a real MIG reconfiguration) and records
// the profile names it was asked for, so a test can see what was carved.
//
// ClaimTestFleet: claims, all Ready, the nodes of the embedded default fleet
// (src/app/fleet_config.cc), so a test's node names are the demo's: p4d.24xlarge-0 and -1,
// p5.48xlarge-0 and g5.48xlarge-0.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "server/nodes/node_claims.h"
#include "server/nodes/node_driver.h"

namespace carve::server::nodes {

class SimulatedNodeDriver final : public NodeDriver {
 public:
  using Sleeper = std::function<void(std::chrono::milliseconds)>;
  // `sleeper` defaults to std::this_thread::sleep_for; tests pass a recorder.
  explicit SimulatedNodeDriver(std::chrono::milliseconds carve_time_per_gpu, Sleeper sleeper = {});

  Status CarveGpu(const NodeId& node, GpuIndex gpu, const core::Layout& layout) override;
  Status ResetGpu(const NodeId& node, GpuIndex gpu) override;

  // NVML profile names last carved on (node, gpu); empty when whole or never carved.
  std::vector<std::string> Carved(const NodeId& node, GpuIndex gpu) const;
  int carve_calls() const;

 private:
  const std::chrono::milliseconds carve_time_;
  Sleeper sleeper_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, uint32_t>, std::vector<std::string>> carved_;  // Guarded by mu_.
  int carve_calls_ = 0;                                                          // Guarded by mu_.
};

Status ClaimTestFleet(NodeClaims& claims);

}  // namespace carve::server::nodes
