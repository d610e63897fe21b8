#include "agent/launch/cgroup.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

namespace carve::launch {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kCpuPeriodUs = 100'000;

// cgroup files take one write(2) each; ofstream buffering would hide the kernel's errno.
Status WriteFile(const fs::path& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Internal("cannot open " + path.string() + ": " + std::strerror(errno));
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return Internal("cannot write \"" + value + "\" to " + path.string() + ": " +
                    std::strerror(e));
  }
  return OkStatus();
}

Status MakeDir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("cannot create cgroup " + dir.string() + ": " + ec.message());
  return OkStatus();
}

bool PlainName(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos;
}

}  // namespace

CgroupManager::CgroupManager(std::string root, std::string parent)
    : root_(std::move(root)), parent_(std::move(parent)) {}

CgroupVersion CgroupManager::Detect() const {
  std::error_code ec;
  if (fs::exists(fs::path(root_) / "cgroup.controllers", ec)) return CgroupVersion::kV2;
  if (fs::is_directory(fs::path(root_) / "cpu", ec) &&
      fs::is_directory(fs::path(root_) / "memory", ec)) {
    return CgroupVersion::kV1;
  }
  return CgroupVersion::kNone;
}

Status CgroupManager::Apply(const std::string& workload, int pid,
                            const HostLimits& limits) const {
  if (!PlainName(workload)) return InvalidArgument("cgroup name \"" + workload + "\" is not plain");
  if (limits.cpu_millicores && *limits.cpu_millicores <= 0) {
    return InvalidArgument("cpu limit " + std::to_string(*limits.cpu_millicores) +
                           " millicores must be > 0");
  }
  if (limits.memory_bytes && *limits.memory_bytes <= 0) {
    return InvalidArgument("memory limit " + std::to_string(*limits.memory_bytes) +
                           " bytes must be > 0");
  }
  const std::string quota = std::to_string(limits.cpu_millicores.value_or(0) * kCpuPeriodUs / 1000);
  const std::string procs = std::to_string(pid);
  switch (Detect()) {
    case CgroupVersion::kNone:
      return FailedPrecondition("no cgroup hierarchy under " + root_ +
                                " (neither cgroup.controllers for v2 nor cpu/ and memory/ for v1)");
    case CgroupVersion::kV2: {
      const fs::path parent = fs::path(root_) / parent_;
      const fs::path dir = parent / workload;
      CARVE_RETURN_IF_ERROR(MakeDir(dir));
      // Controllers must be enabled in every ancestor for the child's files to appear.
      CARVE_RETURN_IF_ERROR(WriteFile(fs::path(root_) / "cgroup.subtree_control", "+cpu +memory"));
      CARVE_RETURN_IF_ERROR(WriteFile(parent / "cgroup.subtree_control", "+cpu +memory"));
      if (limits.cpu_millicores) {
        CARVE_RETURN_IF_ERROR(
            WriteFile(dir / "cpu.max", quota + " " + std::to_string(kCpuPeriodUs)));
      }
      if (limits.memory_bytes) {
        CARVE_RETURN_IF_ERROR(WriteFile(dir / "memory.max", std::to_string(*limits.memory_bytes)));
      }
      return WriteFile(dir / "cgroup.procs", procs);
    }
    case CgroupVersion::kV1: {
      // A cgroup of its own in both hierarchies, limited or not: its usage is its own to read.
      const fs::path cpu = fs::path(root_) / "cpu" / parent_ / workload;
      const fs::path mem = fs::path(root_) / "memory" / parent_ / workload;
      CARVE_RETURN_IF_ERROR(MakeDir(cpu));
      if (limits.cpu_millicores) {
        CARVE_RETURN_IF_ERROR(WriteFile(cpu / "cpu.cfs_period_us", std::to_string(kCpuPeriodUs)));
        CARVE_RETURN_IF_ERROR(WriteFile(cpu / "cpu.cfs_quota_us", quota));
      }
      CARVE_RETURN_IF_ERROR(WriteFile(cpu / "cgroup.procs", procs));
      CARVE_RETURN_IF_ERROR(MakeDir(mem));
      if (limits.memory_bytes) {
        CARVE_RETURN_IF_ERROR(
            WriteFile(mem / "memory.limit_in_bytes", std::to_string(*limits.memory_bytes)));
      }
      return WriteFile(mem / "cgroup.procs", procs);
    }
  }
  return Internal("unknown cgroup version");
}

bool CgroupManager::ApplyOrWarn(const std::string& workload, int pid,
                                const HostLimits& limits) const {
  Status s = Apply(workload, pid, limits);
  if (s.ok()) return true;
  spdlog::warn(
      "carve: host CPU/memory limits for workload {} (pid {}) are NOT enforced: {}. The workload "
      "runs without cgroup limits.",
      workload, pid, s.error().message);
  return false;
}

std::vector<int> CgroupManager::Members(const std::string& workload) const {
  std::vector<int> pids;
  if (!PlainName(workload)) return pids;
  for (const fs::path& dir :
       {fs::path(root_) / parent_ / workload, fs::path(root_) / "memory" / parent_ / workload}) {
    std::ifstream procs(dir / "cgroup.procs");
    for (int pid = 0; procs >> pid;) pids.push_back(pid);
    if (!pids.empty()) break;
  }
  return pids;
}

Status CgroupManager::Remove(const std::string& workload) const {
  if (!PlainName(workload)) return InvalidArgument("cgroup name \"" + workload + "\" is not plain");
  for (const fs::path& dir : {fs::path(root_) / parent_ / workload,
                             fs::path(root_) / "cpu" / parent_ / workload,
                             fs::path(root_) / "memory" / parent_ / workload}) {
    if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
      return Internal("cannot remove cgroup " + dir.string() + ": " + std::strerror(errno));
    }
  }
  return OkStatus();
}

}  // namespace carve::launch
