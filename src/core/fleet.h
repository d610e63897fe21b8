// The fleet as the placement engine sees it: nodes with host CPU and memory, each carrying GPUs
// that are used whole, MIG-carved into a fixed layout, or shared by mGPU workers.
//
// These are plain specifications; PlacementEngine (placement.h) turns them into indexed state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/gpu_model.h"
#include "core/layout.h"

namespace carve::core {

enum class GpuMode {
  kWhole,  // Allocated whole, one allocation per GPU.
  kMig,    // Carved into the partitions of `layout`; each partition is allocated on its own.
  kMgpu,   // Shared by up to 16 mGPU workers: core sums to <= 100, memory to <= the card's
           // memory minus FleetOptions::mgpu_reserved_memory_mib.
};
std::string_view GpuModeName(GpuMode mode);  // "whole", "mig", "mgpu"

// Host CPU in thousandths of a vCPU, as people read it: 250 -> "0.25", 96000 -> "96".
std::string VcpuText(int64_t cpu_milli);

struct GpuSpec {
  const catalog::GpuModel* model = nullptr;
  GpuMode mode = GpuMode::kWhole;
  // kMig only: the carve, as validated by the layout engine (not re-validated here).
  Layout layout;
};

struct NodeSpec {
  std::string name;           // Unique in the fleet and stable: allocations persist it.
  std::string instance_type;  // Informational, e.g. "ml.p4d.24xlarge".
  int64_t cpu_milli = 0;      // Host CPU in thousandths of a vCPU (SageMaker asks for 0.25 and up).
  int64_t host_memory_mib = 0;
  std::vector<GpuSpec> gpus;  // In NVML index order.
};

struct FleetOptions {
  // Card memory that mGPU workers may not take (driver, context and enforcement overhead).
  int64_t mgpu_reserved_memory_mib = 0;
};

// A node carries at most this many GPUs (allocations keep their GPUs inline).
inline constexpr int kMaxGpusPerNode = 16;

}  // namespace carve::core
