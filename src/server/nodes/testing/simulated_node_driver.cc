#include "server/nodes/testing/simulated_node_driver.h"

#include <fmt/format.h>

#include <thread>

namespace carve::server::nodes {

SimulatedNodeDriver::SimulatedNodeDriver(std::chrono::milliseconds carve_time_per_gpu,
                                         Sleeper sleeper)
    : carve_time_(carve_time_per_gpu), sleeper_(std::move(sleeper)) {
  if (!sleeper_) sleeper_ = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
}

Status SimulatedNodeDriver::CarveGpu(const NodeId& node, GpuIndex gpu, const core::Layout& layout) {
  std::vector<std::string> names;
  for (const auto& inst : layout.instances) names.emplace_back(inst.profile->name);
  if (carve_time_.count() > 0) sleeper_(carve_time_);  // Outside the lock: GPUs carve in parallel.
  std::lock_guard lock(mu_);
  carved_[{node.value(), gpu.value()}] = std::move(names);
  ++carve_calls_;
  return OkStatus();
}

Status SimulatedNodeDriver::ResetGpu(const NodeId& node, GpuIndex gpu) {
  std::lock_guard lock(mu_);
  carved_.erase({node.value(), gpu.value()});
  return OkStatus();
}

std::vector<std::string> SimulatedNodeDriver::Carved(const NodeId& node, GpuIndex gpu) const {
  std::lock_guard lock(mu_);
  auto it = carved_.find({node.value(), gpu.value()});
  return it == carved_.end() ? std::vector<std::string>{} : it->second;
}

int SimulatedNodeDriver::carve_calls() const {
  std::lock_guard lock(mu_);
  return carve_calls_;
}

Status ClaimTestFleet(NodeClaims& claims) {
  const std::pair<std::string_view, int> kFleet[] = {
      {"ml.p4d.24xlarge", 2}, {"ml.p5.48xlarge", 1}, {"ml.g5.48xlarge", 1}};
  for (const auto& [type, count] : kFleet) {
    for (int i = 0; i < count; ++i) {
      const NodeId id(fmt::format("{}-{}", type.substr(3), i));  // "p4d.24xlarge-0".
      CARVE_RETURN_IF_ERROR(claims.Upsert(id, type, /*ready=*/true));
    }
  }
  return OkStatus();
}

}  // namespace carve::server::nodes
