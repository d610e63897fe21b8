#include "interposer/ledger_gap.h"

namespace carve::interposer {

LedgerGap ComputeLedgerGap(const LedgerSnapshot& snapshot,
                           std::optional<std::span<const NvmlProcessMemory>> nvml) {
  LedgerGap gap;
  gap.ledger_bytes = snapshot.used_bytes;
  if (!nvml.has_value()) {
    gap.note = "NVML not present: ledger of worker '" + snapshot.settings.worker_id +
               "' not cross-checked";
    return gap;
  }
  uint64_t total = 0;
  for (const NvmlProcessMemory& p : *nvml) total += p.used_bytes;
  gap.nvml_bytes = total;
  gap.gap_bytes = static_cast<int64_t>(total) - static_cast<int64_t>(snapshot.used_bytes);
  return gap;
}

}  // namespace carve::interposer
