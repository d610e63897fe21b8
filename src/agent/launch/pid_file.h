// One pid file per running copy, so that an agent that restarts finds the processes it started
// and adopts or kills them, and never runs a copy twice. The file names the process by pid AND
// start time (/proc/<pid>/stat field 22): after a reboot or pid reuse the pid alone would name
// a stranger, which is never adopted or signalled.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "agent/launch/launcher.h"
#include "common/result.h"

namespace carve::launch {

struct PidRecord {
  ProcessId process;
  int port = 0;  // where the copy serves, so an adopted copy is routed to again
  std::map<std::string, int> ports;  // its named ports (WorkloadDesired.ports), likewise
  friend bool operator==(const PidRecord&, const PidRecord&) = default;
};

// Written beside the target and renamed into place, so a reader never sees half a file.
// Internal with errno's text on I/O failure.
Status WritePidFile(const std::string& path, const PidRecord& record);
// nullopt when there is no file; InvalidArgument when the file is not a pid record.
Result<std::optional<PidRecord>> ReadPidFile(const std::string& path);

enum class Reconcile {
  kNoRecord,  // no pid file: start the copy
  kGone,      // the recorded process is dead (or the pid now names another process): file removed
  kAdopted,   // alive and wanted: supervise the returned record's process (Supervisor::Adopt)
  kKilled,    // alive but no longer wanted: its group was stopped, the file removed
};
struct ReconcileResult {
  Reconcile outcome = Reconcile::kNoRecord;
  std::optional<PidRecord> record;
};

// What a restarted agent does for each pid file it finds. `wanted`: the desired state still
// places this copy on this node.
Result<ReconcileResult> ReconcilePidFile(const std::string& path, Launcher& launcher, bool wanted,
                                         std::chrono::milliseconds grace);

}  // namespace carve::launch
