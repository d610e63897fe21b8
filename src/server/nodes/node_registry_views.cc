// NodeRegistry, the read side: workload and GPU lookups, node views and briefs, ledger gaps and
// the /v1/nodes JSON. Each takes the registry lock once and copies out.
#include "server/nodes/node_registry.h"

#include <fmt/format.h>

namespace carve::server::nodes {

std::optional<protocol::WorkloadStatus> NodeRegistry::Workload(std::string_view id) const {
  std::lock_guard lock(mu_);
  auto at = workload_node_.find(std::string(id));
  if (at == workload_node_.end()) return std::nullopt;
  auto node = nodes_.find(at->second);
  if (node == nodes_.end()) return std::nullopt;
  for (const auto& w : node->second.status.workloads) {
    if (w.id == id) return w;
  }
  return std::nullopt;
}

std::optional<protocol::GpuStatus> NodeRegistry::Gpu(const NodeId& node, int gpu) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node.value());
  if (it == nodes_.end()) return std::nullopt;
  for (const auto& g : it->second.status.gpus) {
    if (g.index == gpu) return g;
  }
  return std::nullopt;
}

namespace {
NodeView ViewOf(const auto& e) {
  NodeView v;
  v.registration = e.registration;
  v.ready = e.ready;
  v.connected = e.connected;
  v.last_report_ms = e.last_report_ms;
  v.not_ready_reason = e.not_ready_reason;
  v.desired_version = e.version;
  v.applied_version = e.status.applied_version;
  v.last_status = e.status;
  return v;
}
}  // namespace

std::optional<NodeView> NodeRegistry::Node(const NodeId& node) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node.value());
  if (it == nodes_.end()) return std::nullopt;
  return ViewOf(it->second);
}

std::vector<NodeView> NodeRegistry::Nodes() const {
  std::lock_guard lock(mu_);
  std::vector<NodeView> out;
  for (const auto& [name, e] : nodes_) out.push_back(ViewOf(e));
  return out;
}

std::optional<NodeBrief> NodeRegistry::Brief(const NodeId& node) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node.value());
  if (it == nodes_.end()) return std::nullopt;
  return NodeBrief{node, it->second.registration.instance_type, it->second.ready,
                   it->second.connected, it->second.not_ready_reason};
}

std::vector<std::pair<std::string, std::string>> NodeRegistry::NotReadyAmong(
    const std::vector<std::string>& nodes) const {
  std::vector<std::pair<std::string, std::string>> out;
  std::lock_guard lock(mu_);
  for (const std::string& name : nodes) {
    auto it = nodes_.find(name);
    if (it != nodes_.end() && !it->second.ready) out.emplace_back(name, it->second.not_ready_reason);
  }
  return out;
}

std::vector<NodeBrief> NodeRegistry::Briefs() const {
  std::lock_guard lock(mu_);
  std::vector<NodeBrief> out;
  out.reserve(nodes_.size());
  for (const auto& [name, e] : nodes_) {
    out.push_back(
        NodeBrief{NodeId(name), e.registration.instance_type, e.ready, e.connected,
                  e.not_ready_reason});
  }
  return out;
}

bool NodeRegistry::IsReady(const NodeId& node) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node.value());
  return it != nodes_.end() && it->second.ready;
}

std::vector<NodeRegistry::LedgerGap> NodeRegistry::LedgerGaps() const {
  std::lock_guard lock(mu_);
  std::vector<LedgerGap> out;
  for (const auto& [name, e] : nodes_) {
    for (const auto& w : e.status.workloads) {
      if (w.memory_used_mib < 0 || w.pid <= 0) continue;
      int64_t nvml = 0;
      for (const auto& g : e.status.gpus) {
        for (const auto& p : g.processes) {
          if (static_cast<int>(p.pid) == w.pid) nvml += p.used_mib;
        }
      }
      out.push_back({name, w.id, w.memory_used_mib, nvml, nvml - w.memory_used_mib});
    }
  }
  return out;
}

nlohmann::json NodeRegistry::ToJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& v : Nodes()) {
    nlohmann::json n{{"NodeId", v.registration.node_id},
                     {"InstanceType", v.registration.instance_type},
                     {"Driver", v.registration.driver},
                     {"DriverVersion", v.registration.driver_version},
                     {"Hostname", v.registration.hostname},
                     {"Status", v.ready ? "Ready" : "NotReady"},
                     // False after a server restart until the node's agent registers again.
                     {"Connected", v.connected},
                     {"LastReportMs", v.last_report_ms},
                     {"DesiredVersion", v.desired_version},
                     {"AppliedVersion", v.applied_version},
                     {"Gpus", nlohmann::json::array()},
                     {"Workloads", nlohmann::json::array()}};
    if (!v.ready) n["Reason"] = v.not_ready_reason;
    if (!v.registration.catalog_diffs.empty()) n["CatalogDiffs"] = v.registration.catalog_diffs;
    for (const auto& g : v.registration.gpus) {
      nlohmann::json gj{{"Index", g.index}, {"Uuid", g.uuid}, {"Name", g.name},
                        {"Model", g.catalog_model}};
      for (const auto& s : v.last_status.gpus) {
        if (s.index != g.index) continue;
        gj["Utilization"] = s.utilization_percent;
        if (!s.error.empty()) gj["Error"] = s.error;
        if (s.pending_reset) gj["PendingReset"] = true;
        nlohmann::json parts = nlohmann::json::array();
        for (const auto& p : s.partitions) {
          parts.push_back({{"Profile", p.profile}, {"Start", p.start}, {"Uuid", p.uuid}});
        }
        gj["Partitions"] = parts;
      }
      n["Gpus"].push_back(gj);
    }
    for (const auto& w : v.last_status.workloads) n["Workloads"].push_back(protocol::ToJson(w));
    out.push_back(n);
  }
  return {{"Nodes", out}};
}

}  // namespace carve::server::nodes
