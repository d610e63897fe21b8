// Where a workload's stdout/stderr go, and the reader behind `carve logs`.
// Layout: <data_dir>/logs/<LogDirName(workload id)>/stdout.log and stderr.log, keyed by the
// workload's unique id (account included), never by a tenant-chosen name alone: a queue or
// component deleted and created again under the same name, by the same or another account, never
// shares a directory with its predecessor (docs/security.md, "Logs"). A restarted process of the
// same workload appends to the same files. Each is kept bounded by CapLog (the agent calls it every
// loop): past the cap, the newest `cap` bytes move to stdout.log.1 (replacing the older ones) and
// the live file starts again from empty.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace carve::launch {

struct LogPaths {
  std::string dir;
  std::string stdout_path;
  std::string stderr_path;
};

// Longest directory name LogDirName returns (well under NAME_MAX, 255).
inline constexpr size_t kMaxLogDirName = 200;

// The one directory name for a workload id: injective, one path component, never "." or "..".
// Bytes of [A-Za-z0-9_-] stay; '.' stays except as the first byte of a segment; '/' (the id's
// segment separator) becomes '+'; every other byte becomes %XX (upper-case hex). Worked example:
//   "acct/ic-a/1f2e" -> "acct+ic-a+1f2e"      "a/../b" -> "a+%2E.+b"      "a+b/c" -> "a%2Bb+c"
// InvalidArgument when the id is empty or its name would exceed kMaxLogDirName bytes (ids are
// never truncated: two long ids must not meet in one directory).
Result<std::string> LogDirName(std::string_view workload_id);

// The inverse of LogDirName: InvalidArgument for a name LogDirName never returns.
Result<std::string> WorkloadIdOfLogDir(std::string_view dir_name);

// <data_dir>/logs/<LogDirName(workload_id)>/...; LogDirName's errors.
Result<LogPaths> LogPathsFor(const std::string& data_dir, std::string_view workload_id);

// The last `max_lines` lines of a workload's stdout and of its stderr, each under a header
// ("==> stdout <=="). NotFound when it has never been started here.
Result<std::string> TailWorkloadLogs(const std::string& data_dir, std::string_view workload_id,
                                     int max_lines);

// Who a log directory belongs to, written beside the streams as "owner" (three lines: id, name,
// index) so that `carve logs NAME --copy N` can find a workload's logs by its name.
struct LogOwner {
  std::string id;
  std::string name;  // component (or queue-job) name
  int index = 0;     // copy (or task) index
  std::string dir;   // filled in by ListWorkloadLogs
};

// Writes <LogPathsFor(data_dir, owner.id).dir>/owner, creating the directory. LogDirName's
// errors; Internal naming the file when it cannot be written.
Status WriteLogOwner(const std::string& data_dir, const LogOwner& owner);

// Every workload log directory under <data_dir>/logs whose owner file names the id its directory
// name decodes to (anything else there is skipped), sorted by id.
std::vector<LogOwner> ListWorkloadLogs(const std::string& data_dir);

// Deletes a workload's log directory (both streams and their rotated ".1" files). Missing is
// fine; Internal naming the directory when it cannot be removed.
Status RemoveWorkloadLogs(const std::string& data_dir, std::string_view workload_id);

// The last `max_lines` lines of a file (all of it when shorter). NotFound when it is missing.
Result<std::string> TailFile(const std::string& path, int max_lines);

// Keeps a log that processes append to (O_APPEND) within `max_bytes`: when it is larger, its
// last `max_bytes` bytes are written to "<path>.1" (through a temporary file, then renamed) and
// the log is truncated to zero; the writers' next appends land at its new end. Nothing happens
// when it is within the cap or missing. Returns true when it rotated. Between two calls a log
// grows by what its writers write, so the bound is max_bytes plus one call interval of output,
// and max_bytes more in "<path>.1". Internal naming the file on an I/O error.
Result<bool> CapLog(const std::string& path, uint64_t max_bytes);

}  // namespace carve::launch
