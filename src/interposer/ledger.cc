#include "interposer/ledger.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace carve::interposer {
namespace {

constexpr uint64_t kMagic = 0x31504D4756524143ULL;  // "CARVGMP1" little-endian
constexpr uint32_t kVersion = 1;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool ValidWorkerChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

struct Ledger::Shared {
  uint64_t magic;
  uint32_t version;
  uint32_t slot_count;
  char worker_id[64];
  uint64_t memory_limit_bytes;
  uint32_t core_percent;
  uint32_t window_ms;
  uint32_t burstable;
  uint32_t reserved0;
  pthread_mutex_t mutex;
  SharedBucket bucket;
  struct SlotEntry {
    std::atomic<int32_t> pid;
    std::atomic<uint64_t> start_time;
    std::atomic<uint64_t> used_bytes;
  } slots[kSlots];
};

LedgerSettings Ledger::SettingsIn(const Shared& sh) {
  LedgerSettings s;
  s.worker_id.assign(sh.worker_id, strnlen(sh.worker_id, sizeof(sh.worker_id)));
  s.memory_limit_bytes = sh.memory_limit_bytes;
  s.core_percent = sh.core_percent;
  s.window_ms = sh.window_ms;
  s.burstable = sh.burstable != 0;
  return s;
}

class Ledger::Lock {
 public:
  explicit Lock(pthread_mutex_t* m) : m_(m) {
    // A holder that died mid-update leaves the mutex inconsistent; every update under it is a
    // single store, so the protected state is valid and only needs to be declared so. Without
    // pthread_mutex_consistent the next unlock would make the mutex unusable for every process
    // of the worker (ENOTRECOVERABLE).
    int r = pthread_mutex_lock(m_);
    if (r == EOWNERDEAD) r = pthread_mutex_consistent(m_);
    held_ = r == 0;
    error_ = r;
  }
  ~Lock() {
    if (held_) pthread_mutex_unlock(m_);
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

  // False when the mutex could not be taken (ENOTRECOVERABLE): nothing may be changed then.
  bool held() const { return held_; }
  int error() const { return error_; }

 private:
  pthread_mutex_t* m_;
  bool held_ = false;
  int error_ = 0;
};

Status ValidateSettings(const LedgerSettings& s) {
  if (s.worker_id.empty() || s.worker_id.size() > 63) {
    return InvalidArgument("worker_id '" + s.worker_id + "' must be 1..63 characters");
  }
  for (char c : s.worker_id) {
    if (!ValidWorkerChar(c)) {
      return InvalidArgument("worker_id '" + s.worker_id +
                             "' may only contain letters, digits, '.', '_' and '-'");
    }
  }
  if (s.memory_limit_bytes == 0) {
    return InvalidArgument("memory_limit_bytes of worker '" + s.worker_id + "' must be > 0");
  }
  if (s.core_percent < 1 || s.core_percent > 100) {
    return InvalidArgument("core_percent " + std::to_string(s.core_percent) + " of worker '" +
                           s.worker_id + "' must be within 1..100");
  }
  if (s.window_ms < 1 || s.window_ms > 60000) {
    return InvalidArgument("window_ms " + std::to_string(s.window_ms) + " of worker '" +
                           s.worker_id + "' must be within 1..60000");
  }
  return OkStatus();
}

Result<std::unique_ptr<Ledger>> Ledger::Create(const std::string& path,
                                               const LedgerSettings& settings,
                                               std::shared_ptr<const ProcessProbe> probe) {
  CARVE_RETURN_IF_ERROR(ValidateSettings(settings));
  if (::access(path.c_str(), F_OK) == 0) {
    return AlreadyExists("ledger " + path + " already exists; remove it before re-creating");
  }
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0660);
  if (fd < 0) return Internal(Errno("create ledger " + tmp));
  if (::ftruncate(fd, sizeof(Shared)) != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return Internal(Errno("size ledger " + tmp));
  }
  void* mem = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mem == MAP_FAILED) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return Internal(Errno("map ledger " + tmp));
  }
  auto* sh = new (mem) Shared{};  // the file is zero-filled; this only sets the non-zero fields
  sh->version = kVersion;
  sh->slot_count = kSlots;
  std::memcpy(sh->worker_id, settings.worker_id.data(), settings.worker_id.size());
  sh->memory_limit_bytes = settings.memory_limit_bytes;
  sh->core_percent = settings.core_percent;
  sh->window_ms = settings.window_ms;
  sh->burstable = settings.burstable ? 1 : 0;
  // The limiter's bucket starts empty at creation time (no banked share).
  sh->bucket.last_refill_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now().time_since_epoch())
                                      .count());
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&sh->mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  std::atomic_thread_fence(std::memory_order_release);
  sh->magic = kMagic;
  ::munmap(mem, sizeof(Shared));
  // Linking publishes a complete file: an Open never sees a half-initialized ledger.
  if (::link(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    errno = err;
    if (err == EEXIST) return AlreadyExists("ledger " + path + " already exists");
    return Internal(Errno("publish ledger " + path));
  }
  ::unlink(tmp.c_str());
  auto ledger = Map(fd, std::move(probe));
  ::close(fd);
  return ledger;
}

Result<std::unique_ptr<Ledger>> Ledger::Open(const std::string& path,
                                             std::shared_ptr<const ProcessProbe> probe) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("ledger " + path + " does not exist");
    return Internal(Errno("open ledger " + path));
  }
  auto ledger = Map(fd, std::move(probe));
  ::close(fd);
  return ledger;
}

Result<std::unique_ptr<Ledger>> Ledger::OpenFd(int fd, std::shared_ptr<const ProcessProbe> probe) {
  return Map(fd, std::move(probe));
}

Result<std::unique_ptr<Ledger>> Ledger::Map(int fd, std::shared_ptr<const ProcessProbe> probe) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Internal(Errno("stat ledger fd " + std::to_string(fd)));
  if (!S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) != sizeof(Shared)) {
    return InvalidArgument("fd " + std::to_string(fd) + " is not a carve ledger (size " +
                           std::to_string(st.st_size) + ", expected " +
                           std::to_string(sizeof(Shared)) + ")");
  }
  int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return Internal(Errno("dup ledger fd"));
  void* mem = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
  if (mem == MAP_FAILED) {
    ::close(own);
    return Internal(Errno("map ledger"));
  }
  auto* sh = static_cast<Shared*>(mem);
  if (sh->magic != kMagic || sh->version != kVersion || sh->slot_count != kSlots) {
    ::munmap(mem, sizeof(Shared));
    ::close(own);
    return InvalidArgument("file is not a version-" + std::to_string(kVersion) + " carve ledger");
  }
  return std::unique_ptr<Ledger>(new Ledger(own, sh, SettingsIn(*sh), std::move(probe)));
}

LedgerSettings Ledger::StoredSettings() const { return SettingsIn(*shared_); }

std::optional<int> Ledger::FindInheritedFd() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  std::optional<int> found;
  int dir_fd = ::dirfd(dir);
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dir_fd) continue;
    struct stat st {};
    if (::fstat(static_cast<int>(fd), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<size_t>(st.st_size) != sizeof(Shared)) {
      continue;
    }
    uint64_t magic = 0;
    if (::pread(static_cast<int>(fd), &magic, sizeof(magic), 0) == sizeof(magic) &&
        magic == kMagic) {
      found = static_cast<int>(fd);
      break;
    }
  }
  ::closedir(dir);
  return found;
}

Ledger::Ledger(int fd, Shared* shared, LedgerSettings settings,
               std::shared_ptr<const ProcessProbe> probe)
    : fd_(fd), shared_(shared), settings_(std::move(settings)), probe_(std::move(probe)) {}

Ledger::~Ledger() {
  ::munmap(shared_, sizeof(Shared));
  ::close(fd_);
}

Status Ledger::KeepAcrossExec() {
  int flags = ::fcntl(fd_, F_GETFD);
  if (flags < 0 || ::fcntl(fd_, F_SETFD, flags & ~FD_CLOEXEC) != 0) {
    return Internal(Errno("clear FD_CLOEXEC on ledger fd"));
  }
  return OkStatus();
}

SharedBucket& Ledger::bucket() { return shared_->bucket; }

uint64_t Ledger::SumLocked() const {
  uint64_t sum = 0;
  for (const auto& slot : shared_->slots) {
    if (slot.pid.load(std::memory_order_relaxed) != 0) {
      sum += slot.used_bytes.load(std::memory_order_relaxed);
    }
  }
  return sum;
}

void Ledger::ReclaimDeadLocked() {
  for (auto& slot : shared_->slots) {
    int32_t pid = slot.pid.load(std::memory_order_relaxed);
    if (pid == 0) continue;
    if (probe_->StartTime(pid) != slot.start_time.load(std::memory_order_relaxed)) {
      slot.used_bytes.store(0, std::memory_order_relaxed);
      slot.start_time.store(0, std::memory_order_relaxed);
      slot.pid.store(0, std::memory_order_release);
    }
  }
}

int Ledger::OwnSlotLocked() {
  int32_t pid = static_cast<int32_t>(::getpid());
  int cached = own_slot_.load(std::memory_order_relaxed);
  if (cached >= 0 && own_pid_.load(std::memory_order_relaxed) == pid &&
      shared_->slots[cached].pid.load(std::memory_order_relaxed) == pid) {
    return cached;
  }
  uint64_t start = probe_->StartTime(pid);
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < kSlots; ++i) {
      auto& slot = shared_->slots[i];
      if (slot.pid.load(std::memory_order_relaxed) != 0) continue;
      slot.used_bytes.store(0, std::memory_order_relaxed);
      slot.start_time.store(start, std::memory_order_relaxed);
      slot.pid.store(pid, std::memory_order_release);
      own_slot_.store(i, std::memory_order_relaxed);
      own_pid_.store(pid, std::memory_order_relaxed);
      return i;
    }
    ReclaimDeadLocked();
  }
  return -1;
}

Status Ledger::Reserve(uint64_t bytes) {
  Lock lock(&shared_->mutex);
  if (!lock.held()) {
    return Internal("ledger mutex of worker '" + settings_.worker_id +
                    "' cannot be taken: " + std::strerror(lock.error()));
  }
  int slot = OwnSlotLocked();
  if (slot < 0) {
    return ResourceExhausted("ledger of worker '" + settings_.worker_id + "' has all " +
                             std::to_string(kSlots) + " process slots held by live processes");
  }
  const uint64_t limit = settings_.memory_limit_bytes;
  uint64_t used = SumLocked();
  if (bytes > limit || used > limit - bytes) {
    // Only pay for the /proc walk when the answer would be "no".
    ReclaimDeadLocked();
    slot = OwnSlotLocked();
    used = SumLocked();
    if (slot < 0 || bytes > limit || used > limit - bytes) {
      return ResourceExhausted("worker '" + settings_.worker_id + "' memory quota is " +
                               std::to_string(limit) + " bytes with " + std::to_string(used) +
                               " in use; a request for " + std::to_string(bytes) +
                               " bytes would exceed it");
    }
  }
  auto& used_slot = shared_->slots[slot].used_bytes;
  used_slot.store(used_slot.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  return OkStatus();
}

void Ledger::Release(uint64_t bytes) {
  Lock lock(&shared_->mutex);
  if (!lock.held()) return;
  int slot = OwnSlotLocked();
  if (slot < 0) return;
  auto& used_slot = shared_->slots[slot].used_bytes;
  uint64_t held = used_slot.load(std::memory_order_relaxed);
  used_slot.store(held > bytes ? held - bytes : 0, std::memory_order_relaxed);
}

uint64_t Ledger::UsedBytes() {
  Lock lock(&shared_->mutex);
  if (lock.held()) ReclaimDeadLocked();
  return SumLocked();
}

LedgerSnapshot Ledger::Snapshot() {
  LedgerSnapshot snap;
  snap.settings = settings_;
  Lock lock(&shared_->mutex);
  for (const auto& slot : shared_->slots) {
    int32_t pid = slot.pid.load(std::memory_order_relaxed);
    if (pid == 0) continue;
    uint64_t used = slot.used_bytes.load(std::memory_order_relaxed);
    snap.processes.push_back({pid, used});
    snap.used_bytes += used;
  }
  return snap;
}

}  // namespace carve::interposer
