// Cross-check of the ledger against what NVML says the worker's processes hold on the device.
// HAMi's most reported bug is this gap (peers.md pain point 1): memory the hooks never saw. The
// agent, which has NVML and knows the worker's host pids, computes it and exports it as a metric.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "interposer/ledger.h"

namespace carve::interposer {

struct NvmlProcessMemory {
  uint32_t host_pid = 0;
  uint64_t used_bytes = 0;  // nvmlProcessInfo_t.usedGpuMemory
};

struct LedgerGap {
  uint64_t ledger_bytes = 0;
  std::optional<uint64_t> nvml_bytes;  // absent when NVML is not present
  // nvml - ledger: positive means device memory the hooks did not see (driver context, padding,
  // pool granularity, or an unhooked path); negative means the ledger over-charges (pool caches).
  std::optional<int64_t> gap_bytes;
  std::string note;  // says why the gap is absent
};

// `nvml` is nullopt when NVML is absent (no driver, CI): the gap is then reported as unmeasured,
// never as zero. Otherwise the worker's processes as NVML lists them (the pid namespaces differ,
// so totals are compared, not pids).
LedgerGap ComputeLedgerGap(const LedgerSnapshot& snapshot,
                           std::optional<std::span<const NvmlProcessMemory>> nvml);

}  // namespace carve::interposer
