// Where a copy's stdout/stderr go, and the reader behind `carve logs COMPONENT [--copy N]`.
// Layout: <data_dir>/logs/<component>/copy-<N>/stdout.log and stderr.log; a restarted copy
// appends to the same files. Each is kept bounded by CapLog (the agent calls it every loop):
// past the cap, the newest `cap` bytes move to stdout.log.1 (replacing the older ones) and the
// live file starts again from empty.
#pragma once

#include <string>

#include "common/result.h"

namespace carve::launch {

struct LogPaths {
  std::string dir;
  std::string stdout_path;
  std::string stderr_path;
};

// InvalidArgument when the component is not a plain name ([A-Za-z0-9._-]) or copy < 0.
Result<LogPaths> LogPathsFor(const std::string& data_dir, const std::string& component, int copy);

// The last `max_lines` lines of a copy's stdout and of its stderr, each under a header
// ("==> stdout <=="). NotFound when the copy has never been started here.
Result<std::string> TailCopyLogs(const std::string& data_dir, const std::string& component,
                                 int copy, int max_lines);

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
