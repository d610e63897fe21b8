// Where a copy's stdout/stderr go, and the reader behind `carve logs COMPONENT [--copy N]`.
// Layout: <data_dir>/logs/<component>/copy-<N>/stdout.log and stderr.log; a restarted copy
// appends to the same files.
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

}  // namespace carve::launch
