#include "app/data_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace carve::app {

namespace {

std::string Octal(mode_t mode) {
  char out[8];
  std::snprintf(out, sizeof out, "%04o", static_cast<unsigned>(mode & 07777));
  return out;
}

std::string ReadHolder(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

Result<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::string& data_dir) {
  const std::string path = data_dir + "/server.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Unavailable("cannot open the data directory's lock file " + path + ": " +
                       std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = ReadHolder(fd);
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return FailedPrecondition("--data-dir " + data_dir +
                                " is in use: another carve server (pid " + holder + ") holds " +
                                path + "; stop that server, or give this one another --data-dir");
    }
    return Unavailable("cannot lock " + path + ": " + std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    ::close(fd);
    return Unavailable("cannot write " + path + ": " + std::strerror(err));
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(fd));
}

DataDirLock::~DataDirLock() { ::close(fd_); }

Status CheckCredentialsFile(const std::string& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return OkStatus();
    return Unavailable("cannot stat the credentials file " + file + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return FailedPrecondition("the credentials file " + file +
                              " is not a regular file; replace it with the file itself");
  }
  if ((st.st_mode & 077) != 0) {
    return FailedPrecondition("the credentials file " + file + " has mode " + Octal(st.st_mode) +
                              ", so others may read the secret keys in it; run `chmod 600 " + file +
                              "` (and rotate the keys if others could read them)");
  }
  return OkStatus();
}

Error BadDatabase(const std::string& file, const Error& cause) {
  Error e = cause;
  e.message = "cannot open the database " + file + ": " + cause.message;
  // Internal is what SQLite's "not a database" and "malformed" map to (sqlite_util.cc); an
  // Unavailable one (busy, full, unreadable) says what to fix already.
  if (cause.code == ErrorCode::kInternal) {
    e.message +=
        ". The file is damaged or not carve's, and carve never resets it: restore it "
        "from a backup, or move it away to start with an empty database";
  }
  return e;
}

}  // namespace carve::app
