// The server's checks of its data directory at start: one server per directory, and a
// credentials file that only its owner can read. Each refusal names the file and what to do.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"

namespace carve::app {

// Holds an exclusive flock(2) on <data_dir>/server.lock for as long as it lives, so that a
// second server started on the same directory is refused instead of sharing the database (and
// the agents' records) with the first. The lock goes with the process, so a server killed with
// kill -9 leaves nothing to clean up. The descriptor is close-on-exec: copies do not hold it.
class DataDirLock {
 public:
  // FailedPrecondition naming the lock file and the holder's pid when another process holds it;
  // Unavailable when the file cannot be opened or written.
  static Result<std::unique_ptr<DataDirLock>> Acquire(const std::string& data_dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_;
};

// OK when `file` does not exist (the server creates it, mode 0600) or is a regular file that
// neither group nor others may read or write; FailedPrecondition otherwise, naming the file, its
// mode and the chmod that fixes it. The file holds every account's secret key.
Status CheckCredentialsFile(const std::string& file);

// `cause`, from opening the database `file`, with the file named and, for a damaged one, what
// to do (the server never moves or resets it). Same code as `cause`.
Error BadDatabase(const std::string& file, const Error& cause);

}  // namespace carve::app
