// For service tests in agent mode: plays a node's agent in-process, applying its desired state
// at once and reporting it.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "server/nodes/node_registry.h"

namespace carve::server::sagemaker {

// Reports `node`'s desired state as applied: every GPU carved as asked (every partition at start
// 0 when `misreport`), every workload given a loopback port and the state `decide` sets on it
// (it starts as "running").
inline void ReportApplied(
    nodes::NodeRegistry& registry, const std::string& node,
    const std::function<void(const protocol::WorkloadDesired&, protocol::WorkloadStatus&)>& decide,
    bool misreport = false) {
  auto d = registry.WaitDesired(node, registry.epoch(), 0, std::chrono::milliseconds(0));
  if (!d.has_value()) return;
  protocol::StatusReport s;
  s.node_id = node;
  s.epoch = registry.epoch();
  s.applied_version = d->version;
  for (const auto& g : d->gpus) {
    protocol::GpuStatus gs;
    gs.index = g.index;
    gs.mig = g.mig;
    gs.applied = true;
    for (const auto& p : g.partitions) {
      gs.partitions.push_back(
          {p.profile, misreport ? 0 : p.start, "MIG-" + node + "-" + p.profile});
    }
    s.gpus.push_back(gs);
  }
  int port = 9000;
  for (const auto& w : d->workloads) {
    protocol::WorkloadStatus ws;
    ws.id = w.id;
    ws.state = protocol::WorkloadState::kRunning;
    ws.port = ++port;
    ws.address = "127.0.0.1:" + std::to_string(port);
    decide(w, ws);
    s.workloads.push_back(ws);
  }
  registry.ReportStatus(s);
}

}  // namespace carve::server::sagemaker
