// NodeRegistry, the carve side: waiting until agents report a GPU layout applied, and deciding
// when a report is a final answer (carved, failed, or carved otherwise).
#include "server/nodes/node_registry.h"

#include <fmt/format.h>

namespace carve::server::nodes {
namespace {

// "[4g.20gb@0, 3g.20gb@4]": a desired or reported layout in a message.
template <typename Partition>
std::string DescribePartitions(const std::vector<Partition>& partitions) {
  std::string out = "[";
  for (const Partition& p : partitions) {
    out += fmt::format("{}{}@{}", out.size() > 1 ? ", " : "", p.profile, p.start);
  }
  return out + "]";
}

// `have.mig` is the GPU's MIG mode, which carving never changes: a GPU used whole may keep MIG
// enabled with no instances, so only the applied flag and the partitions are compared.
bool Matches(const protocol::GpuDesired& want, const protocol::GpuStatus& have) {
  if (!have.applied) return false;
  if (have.partitions.size() != want.partitions.size()) return false;
  for (size_t i = 0; i < want.partitions.size(); ++i) {
    if (have.partitions[i].profile != want.partitions[i].profile ||
        have.partitions[i].start != want.partitions[i].start) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<Status> NodeRegistry::GpuOutcomeLocked(const std::string& node, const Entry& e,
                                                     int gpu, const protocol::GpuDesired& want,
                                                     uint64_t target) const {
  for (const auto& have : e.status.gpus) {
    if (have.index != gpu) continue;
    if (Matches(want, have)) return OkStatus();
    // A report acted on this version or a later one of this server (a version above the
    // registry's own is left from an earlier server process): its outcome is final.
    if (e.status.applied_version >= target && e.status.applied_version <= e.version) {
      if (have.pending_reset) {
        return FailedPrecondition(fmt::format(
            "GPU {} of {}: MIG mode is pending a GPU reset; reset the GPU, then retry", gpu, node));
      }
      if (!have.error.empty()) {
        return FailedPrecondition(fmt::format("GPU {} of {}: {}", gpu, node, have.error));
      }
      if (have.applied) {
        return FailedPrecondition(fmt::format(
            "GPU {} of {}: the agent reports the GPU applied as {}, but the desired layout is "
            "{}; the carve is refused rather than serve copies from partitions that differ",
            gpu, node, DescribePartitions(have.partitions), DescribePartitions(want.partitions)));
      }
    }
  }
  return std::nullopt;
}

Status NodeRegistry::WaitForGpu(const NodeId& node, int gpu, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  uint64_t target = 0;
  while (true) {
    auto it = nodes_.find(node.value());
    if (it == nodes_.end()) return NotFound("node " + node.value() + " is not registered");
    const Entry& e = it->second;
    auto want = e.gpus.find(gpu);
    if (want == e.gpus.end()) return NotFound(fmt::format("GPU {} of {} has no desired layout",
                                                          gpu, node.value()));
    if (target == 0) target = e.version;
    if (!e.ready) {
      return Unavailable("node " + node.value() + " is NotReady: " + e.not_ready_reason);
    }
    if (auto outcome = GpuOutcomeLocked(node.value(), e, gpu, want->second, target)) {
      return *outcome;
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return Unavailable(fmt::format("GPU {} of {}: the agent did not apply the layout within {} s",
                                     gpu, node.value(),
                                     std::chrono::duration_cast<std::chrono::seconds>(timeout)
                                         .count()));
    }
  }
}

Status NodeRegistry::WaitForNodes(const std::vector<NodeId>& nodes,
                                  std::chrono::milliseconds timeout,
                                  const std::atomic<bool>* abort) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const int cursor = Subscribe();
  struct Unsubscriber {
    NodeRegistry& r;
    int id;
    ~Unsubscriber() { r.Unsubscribe(id); }
  } unsubscribe{*this, cursor};

  std::unique_lock lock(mu_);
  // The version each node had when the wait began: an error reported for an older desired
  // state is not this carve's failure.
  std::map<std::string, uint64_t> pending;
  for (const NodeId& n : nodes) {
    auto it = nodes_.find(n.value());
    if (it == nodes_.end()) return NotFound("node " + n.value() + " is not registered");
    pending.emplace(n.value(), it->second.version);
  }
  // OK: carved; nullopt: still carving; an error: this node's carve failed.
  auto check = [&](const std::string& name, uint64_t target) -> std::optional<Status> {
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return NotFound("node " + name + " is not registered");
    const Entry& e = it->second;
    if (!e.ready) return Unavailable("node " + name + " is NotReady: " + e.not_ready_reason);
    for (const auto& [gpu, want] : e.gpus) {
      std::optional<Status> outcome = GpuOutcomeLocked(name, e, gpu, want, target);
      if (!outcome) return std::nullopt;  // Still carving.
      if (!outcome->ok()) return outcome;
    }
    return OkStatus();
  };
  auto settle = [&](const std::string& name) -> std::optional<Status> {
    auto it = pending.find(name);
    if (it == pending.end()) return std::nullopt;
    std::optional<Status> st = check(name, it->second);
    if (!st) return std::nullopt;
    if (st->ok()) {
      pending.erase(it);
      return std::nullopt;
    }
    return st;
  };
  subscribers_[cursor] = RegistryChanges{};  // The first look below covers every node.
  std::vector<std::string> all;
  for (const auto& [name, target] : pending) all.push_back(name);
  for (const std::string& name : all) {
    if (auto failed = settle(name)) return *failed;
  }
  while (!pending.empty()) {
    if (abort != nullptr && abort->load()) return Unavailable("the carve was aborted");
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return Unavailable(fmt::format(
          "{} of {} nodes (first: {}) did not apply their layout within {} s", pending.size(),
          nodes.size(), pending.begin()->first,
          std::chrono::duration_cast<std::chrono::seconds>(timeout).count()));
    }
    // Short waits, so an abort is seen; a report wakes the wait at once.
    changed_.wait_until(lock, std::min(deadline, now + std::chrono::milliseconds(200)));
    RegistryChanges changes;
    std::swap(changes, subscribers_[cursor]);
    if (changes.everything) {
      all.clear();
      for (const auto& [name, target] : pending) all.push_back(name);
      for (const std::string& name : all) {
        if (auto failed = settle(name)) return *failed;
      }
      continue;
    }
    for (const auto* set : {&changes.nodes, &changes.gpus}) {
      for (const std::string& name : *set) {
        if (auto failed = settle(name)) return *failed;
      }
    }
  }
  return OkStatus();
}

}  // namespace carve::server::nodes
