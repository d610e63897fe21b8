#include "agent/node/node_identity.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "catalog/catalog.h"

namespace carve::agent::node {
namespace {

std::string DescribeGpus(std::span<const catalog::GpuModel* const> gpus) {
  std::vector<std::string> names;
  for (const catalog::GpuModel* m : gpus) {
    names.push_back(m == nullptr ? "an uncatalogued GPU" : std::string(m->id));
  }
  return names.empty() ? "no GPUs" : fmt::format("{}", fmt::join(names, ", "));
}

// Is `a` a better pick than `b` for a host with `host_vcpus`?
bool Better(const catalog::InstanceType& a, const catalog::InstanceType& b, int host_vcpus) {
  const bool a_fits = a.vcpus <= host_vcpus;
  const bool b_fits = b.vcpus <= host_vcpus;
  if (a_fits != b_fits) return a_fits;
  if (a.vcpus != b.vcpus) return a_fits ? a.vcpus > b.vcpus : a.vcpus < b.vcpus;
  return a.usd_per_hour > 0 && b.usd_per_hour <= 0;
}

}  // namespace

Result<std::string> DeriveInstanceType(std::span<const catalog::GpuModel* const> gpus,
                                       int host_vcpus) {
  const std::string found = DescribeGpus(gpus);
  if (gpus.empty()) {
    return InvalidArgument("cannot derive an instance type: the node has no GPUs; pass one");
  }
  const catalog::GpuModel* model = gpus.front();
  for (const catalog::GpuModel* m : gpus) {
    if (m == nullptr || m != model) {
      return InvalidArgument(fmt::format(
          "cannot derive an instance type from GPUs [{}]: instance types carry one catalogued "
          "model; pass --instance-type",
          found));
    }
  }
  const catalog::InstanceType* best = nullptr;
  for (const catalog::InstanceType& t : catalog::AllInstanceTypes()) {
    if (t.gpu_id != model->id || t.gpu_count != static_cast<int>(gpus.size())) continue;
    if (best == nullptr || Better(t, *best, host_vcpus)) best = &t;
  }
  if (best == nullptr) {
    return InvalidArgument(fmt::format(
        "cannot derive an instance type from GPUs [{}]: no catalog instance type has {} x {}; "
        "pass --instance-type",
        found, gpus.size(), model->id));
  }
  return std::string(best->id);
}

Result<std::string> SimConfigFor(std::string_view instance_type) {
  CARVE_ASSIGN_OR_RETURN(const catalog::InstanceType* t, catalog::FindInstanceType(instance_type));
  return fmt::format("gpus: {} x {}", t->gpu_count, t->gpu_id);
}

protocol::Registration BuildRegistration(const NodeFacts& facts, const NodeInventory& inventory) {
  protocol::Registration r;
  r.node_id = facts.node_id;
  r.instance_type = facts.instance_type;
  r.driver = facts.driver;
  r.driver_version = facts.driver == "sim" ? "" : inventory.driver_version;
  r.hostname = facts.hostname;
  r.data_dir = facts.data_dir;
  for (const DiscoveredGpu& g : inventory.gpus) {
    protocol::GpuInventory inv;
    inv.index = static_cast<int>(g.index.value());
    inv.uuid = g.device.uuid;
    inv.name = g.device.name;
    inv.pci_device_id = g.device.pci_device_id >> 16;
    inv.memory_mib = static_cast<int64_t>(g.device.memory_total_mib);
    inv.mig_capable = g.mig_capable;
    inv.mig_mode_current = g.mig.current_enabled ? 1 : 0;
    inv.mig_mode_pending = g.mig.pending_enabled ? 1 : 0;
    inv.catalog_model = g.model == nullptr ? "" : std::string(g.model->id);
    r.gpus.push_back(std::move(inv));
  }
  for (const CatalogDifference& d : inventory.differences) {
    r.catalog_diffs.push_back(fmt::format("gpu {}{}{} {}: catalog {}, live {}: {}", d.gpu.value(),
                                          d.profile.empty() ? "" : " ", d.profile,
                                          DifferenceKindName(d.kind), d.catalog_value,
                                          d.live_value, d.message));
  }
  return r;
}

}  // namespace carve::agent::node
