// The catalog cross-check: compares what NVML reports for a GPU with carve's catalog row.
//
// Keys are (PCI device id, NVML profile id), never names: names change with the driver. Each
// difference says which GPU and profile, what the catalog holds and what NVML reported; the
// live value is the one the agent uses.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "catalog/driver_version.h"
#include "common/ids.h"

namespace carve::agent {

struct DiscoveredGpu;

enum class DifferenceKind {
  kUnknownGpu,      // The PCI device id is not in the catalog.
  kMigSupport,      // The catalog and NVML disagree on whether the GPU does MIG.
  kDriverTooOld,    // The driver is below the catalog's MIG minimum for this GPU.
  kMissingLive,     // A catalog profile the driver should offer is not in the live table.
  kMissingCatalog,  // A live profile id the catalog does not have.
  kName,
  kSliceCount,
  kInstanceCount,
  kSms,
  kMemory,
  kPlacements,
};

// "unknown-gpu", "mig-support", "driver-too-old", "missing-live", "missing-catalog", "name",
// "slice-count", "instance-count", "sms", "memory", "placements".
std::string_view DifferenceKindName(DifferenceKind kind);

struct CatalogDifference {
  GpuIndex gpu;
  DifferenceKind kind;
  std::string profile;        // Profile name (catalog's, else live), empty for GPU-level rows.
  std::string catalog_value;  // What the catalog says, e.g. "{0,4}:4".
  std::string live_value;     // What NVML says.
  std::string message;        // One sentence for people.
};

// Compares one discovered GPU with its catalog row (gpu.model). A GPU without a model yields a
// single kUnknownGpu row. `driver` is the node's driver version (unset when unparseable).
std::vector<CatalogDifference> CrossCheck(const DiscoveredGpu& gpu,
                                          const catalog::DriverVersion& driver);

}  // namespace carve::agent
