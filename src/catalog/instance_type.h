// An instance type row: which GPUs a SageMaker/EC2 instance carries and what it costs.
#pragma once

#include <cstdint>
#include <string_view>

namespace carve::catalog {

struct InstanceType {
  std::string_view id;      // "ml.p4d.24xlarge".
  std::string_view gpu_id;  // Canonical GpuModel id: "a100-40gb".
  int gpu_count = 0;
  int vcpus = 0;
  int64_t memory_mib = 0;   // Host memory.
  double usd_per_hour = 0;  // On-demand list price; 0 when no source gives one.
  std::string_view price_source;  // Where the price comes from, or why it is missing.
};

}  // namespace carve::catalog
