// The shared-memory ledger of one mGPU worker: its quota settings, the device bytes each of its
// processes holds, and the shared state of its compute limiter. It is a file the agent creates
// (Ledger::Create) and every interposed process of the worker maps (Ledger::Open / OpenFd), so
// the quota is container-wide, not per process.
//
// Robustness: each process charges its own slot, keyed by (pid, start time). A process that dies
// while holding memory (SIGKILL, crash) leaves its slot behind; the slot is reclaimed the next
// time anyone needs room or reads the total, once the probe says that (pid, start) is gone. The
// slot table is guarded by a process-shared robust mutex: if a holder dies inside the critical
// section the next locker repairs it (every update is a single store, so nothing is half done).
//
// Thread-safety: all methods are safe from any thread of any process sharing the file.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "interposer/process_probe.h"

namespace carve::interposer {

// What the agent decides for a worker. Exact integers only.
struct LedgerSettings {
  std::string worker_id;          // [A-Za-z0-9._-], 1..63 characters
  uint64_t memory_limit_bytes = 0;  // > 0
  uint32_t core_percent = 100;    // 1..100; 100 disables the compute limiter
  bool burstable = false;         // true disables the compute limiter
  uint32_t window_ms = 100;       // limiter window, 1..60000

  friend bool operator==(const LedgerSettings&, const LedgerSettings&) = default;
};

// InvalidArgument naming the field, the value and the rule.
Status ValidateSettings(const LedgerSettings& settings);

// The compute limiter's state, shared by all processes of the worker (see launch_limiter.h).
struct SharedBucket {
  std::atomic<int64_t> tokens_ns;        // busy time the worker may still start
  std::atomic<int64_t> last_refill_ns;   // CLOCK_MONOTONIC of the last refill
  std::atomic<int64_t> busy_ns_total;    // busy time charged (measured or estimated), all processes
  std::atomic<int64_t> launches_total;   // launches admitted, all processes
  std::atomic<int64_t> throttled_ns_total;  // time launches waited for tokens
};

struct ProcessUsage {
  int32_t pid = 0;
  uint64_t used_bytes = 0;
};

struct LedgerSnapshot {
  LedgerSettings settings;
  uint64_t used_bytes = 0;
  std::vector<ProcessUsage> processes;  // live processes holding a slot
};

class Ledger {
 public:
  static constexpr int kSlots = 1024;

  // Creates the file at `path` atomically (written beside it, then linked into place). AlreadyExists when
  // a file is there; InvalidArgument for bad settings; Internal for I/O failures (with errno).
  static Result<std::unique_ptr<Ledger>> Create(const std::string& path,
                                                const LedgerSettings& settings,
                                                std::shared_ptr<const ProcessProbe> probe);
  // Maps an existing ledger. NotFound when absent; InvalidArgument when it is not a ledger.
  static Result<std::unique_ptr<Ledger>> Open(const std::string& path,
                                              std::shared_ptr<const ProcessProbe> probe);
  // Maps the ledger behind an open descriptor (duplicated; the caller keeps `fd`).
  static Result<std::unique_ptr<Ledger>> OpenFd(int fd, std::shared_ptr<const ProcessProbe> probe);
  // Finds a ledger among this process's open descriptors (one inherited across exec), if any.
  static std::optional<int> FindInheritedFd();

  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // The settings as they were when this process created or opened the file.
  const LedgerSettings& settings() const { return settings_; }
  // The settings the file holds now. Every process of the worker can write the file, so the
  // agent compares these with settings() to see a worker that rewrote its own limits.
  LedgerSettings StoredSettings() const;
  int fd() const { return fd_; }
  // Clears FD_CLOEXEC so that children exec'd by this process inherit the ledger.
  Status KeepAcrossExec();

  // Charges `bytes` to the calling process if the worker's total stays within the limit.
  // ResourceExhausted (naming worker, limit, used and request) otherwise; nothing changes then.
  Status Reserve(uint64_t bytes);
  // Returns `bytes` charged earlier by the calling process (clamped at what it holds).
  void Release(uint64_t bytes);
  // Bytes held by live processes of the worker (dead ones are reclaimed first). Called by
  // processes of the worker only: liveness is judged in the caller's pid namespace.
  uint64_t UsedBytes();
  // Read-only view for the agent and metrics. It reclaims nothing: the agent may live in another
  // pid namespace than the worker, where the worker's pids mean other processes.
  LedgerSnapshot Snapshot();
  SharedBucket& bucket();

 private:
  struct Shared;
  Ledger(int fd, Shared* shared, LedgerSettings settings,
         std::shared_ptr<const ProcessProbe> probe);
  static Result<std::unique_ptr<Ledger>> Map(int fd, std::shared_ptr<const ProcessProbe> probe);
  static LedgerSettings SettingsIn(const Shared& shared);
  class Lock;
  int OwnSlotLocked();           // requires the mutex; -1 when the table is full of live pids
  uint64_t SumLocked() const;    // requires the mutex
  void ReclaimDeadLocked();      // requires the mutex

  int fd_;
  Shared* shared_;
  LedgerSettings settings_;
  std::shared_ptr<const ProcessProbe> probe_;
  // Cached slot of this process; re-validated against getpid() so a forked child takes its own.
  std::atomic<int> own_slot_{-1};
  std::atomic<int32_t> own_pid_{0};
};

}  // namespace carve::interposer
