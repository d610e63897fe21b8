#include "agent/launch/sandbox_uids.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace carve::launch {
namespace {

// (uid_t)-1 is "no uid" to chown and setresuid; 2^32-2 is the last a process can hold.
constexpr uint32_t kLastUid = 0xFFFFFFFE;

bool ValidAccount(const std::string& account) {
  if (account.empty() || account.size() > 64) return false;
  for (char c : account) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Result<SandboxUids> SandboxUids::Open(std::string path, uint32_t base, uint32_t count,
                                      uint32_t container_base) {
  if (base == 0 || count == 0 || uint64_t{base} + count > uint64_t{kLastUid}) {
    return InvalidArgument(
        fmt::format("sandbox uid range {} + {} must be non-empty, above 0 (root) and below 2^32-1",
                    base, count));
  }
  if (uint64_t{container_base} < uint64_t{base} + count ||
      uint64_t{container_base} + kContainerIdsPerAccount > uint64_t{kLastUid}) {
    return InvalidArgument(fmt::format(
        "container uid base {} must lie above the sandbox uid range {}..{} and leave one block "
        "of {} ids below 2^32-1",
        container_base, base, uint64_t{base} + count - 1, kContainerIdsPerAccount));
  }
  SandboxUids uids(std::move(path), base, count, container_base);
  std::ifstream in(uids.path_);
  std::set<uint32_t> taken;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string account;
    int64_t index = -1;
    std::string extra;
    if (!(fields >> account >> index) || (fields >> extra) || !ValidAccount(account) || index < 0 ||
        index >= count || !taken.insert(static_cast<uint32_t>(index)).second ||
        uids.index_.contains(account)) {
      return InvalidArgument(fmt::format(
          "{} line {}: expected \"<account> <index>\" with a unique index below {}, got \"{}\"",
          uids.path_, line_no, count, line.substr(0, 80)));
    }
    uids.index_[account] = static_cast<uint32_t>(index);
  }
  return uids;
}

Result<uint32_t> SandboxUids::UidFor(const std::string& account) {
  CARVE_ASSIGN_OR_RETURN(const uint32_t index, IndexFor(account));
  return base_ + index;
}

Result<IdRange> SandboxUids::ContainerIdsFor(const std::string& account) {
  CARVE_ASSIGN_OR_RETURN(const uint32_t index, IndexFor(account));
  const uint64_t first = uint64_t{container_base_} + uint64_t{index} * kContainerIdsPerAccount;
  if (first + kContainerIdsPerAccount > uint64_t{kLastUid}) {
    return ResourceExhausted(fmt::format(
        "account {} (sandbox index {}) has no container id block: {} + {} * {} passes 2^32-1; "
        "lower --sandbox-container-uid-base",
        account, index, container_base_, index, kContainerIdsPerAccount));
  }
  return IdRange{static_cast<uint32_t>(first), kContainerIdsPerAccount};
}

Result<uint32_t> SandboxUids::IndexFor(const std::string& account) {
  if (!ValidAccount(account)) {
    return InvalidArgument(
        fmt::format("account \"{}\" is not [0-9A-Za-z_-]{{1,64}}", account.substr(0, 64)));
  }
  if (auto it = index_.find(account); it != index_.end()) return it->second;
  // Indexes are handed out in order and never freed, so the next one is the count so far.
  const auto next = static_cast<uint32_t>(index_.size());
  if (next >= count_) {
    return ResourceExhausted(fmt::format(
        "all {} sandbox uids from {} are taken by other accounts; raise --sandbox-uid-count",
        count_, base_));
  }
  const std::string line = fmt::format("{} {}\n", account, next);
  const int fd =
      ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Internal(fmt::format("cannot open {}: {}", path_, std::strerror(errno)));
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                       ::fsync(fd) == 0;
  const int e = errno;
  ::close(fd);
  if (!written) return Internal(fmt::format("cannot write {}: {}", path_, std::strerror(e)));
  index_[account] = next;
  return next;
}

}  // namespace carve::launch
