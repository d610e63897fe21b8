// Tells whether a process that took a ledger slot is still the same live process. The ledger uses
// it to reclaim slots of processes that died without freeing (SIGKILL, OOM kill, crash).
#pragma once

#include <cstdint>

namespace carve::interposer {

class ProcessProbe {
 public:
  virtual ~ProcessProbe() = default;
  // Start time of `pid` in clock ticks since boot (/proc/<pid>/stat field 22), or 0 when no such
  // process exists. A reused pid has a different start time, so (pid, start) names one process.
  virtual uint64_t StartTime(int32_t pid) const = 0;
};

// Reads /proc. Thread-safe.
class ProcfsProcessProbe final : public ProcessProbe {
 public:
  uint64_t StartTime(int32_t pid) const override;
};

}  // namespace carve::interposer
