#include "agent/node/fence.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "agent/launch/pid_file.h"
#include "agent/launch/process_launcher.h"

namespace carve::agent::node {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMagic = 0x31454E4546565243ULL;  // "CRVFENE1" little-endian
// The watchdog's poll and stop grace FenceAfter leaves room for.
constexpr std::chrono::milliseconds kWatchdogLatency{600};
constexpr std::chrono::milliseconds kMinFenceAfter{300};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct FenceBeat::Shared {
  std::atomic<uint64_t> magic;
  std::atomic<int64_t> agent_pid;
  std::atomic<int64_t> beat_ms;         // steady_clock of the last beat
  std::atomic<int64_t> fence_after_ms;  // 0: disarmed
  std::atomic<int64_t> stand_down;      // 1: exit without fencing
  std::atomic<int64_t> fenced;          // workloads the watchdog stopped, in total
};
static_assert(std::atomic<int64_t>::is_always_lock_free, "the fence file is shared memory");

namespace {

Result<FenceBeat::Shared*> Map(const std::string& path, bool create) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
  if (fd < 0) return Internal("fence file " + path + ": " + std::strerror(errno));
  if (create && ::ftruncate(fd, sizeof(FenceBeat::Shared)) != 0) {
    const int e = errno;
    ::close(fd);
    return Internal("fence file " + path + ": " + std::strerror(e));
  }
  void* mem = ::mmap(nullptr, sizeof(FenceBeat::Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  ::close(fd);
  if (mem == MAP_FAILED) return Internal("fence file " + path + ": " + std::strerror(e));
  return static_cast<FenceBeat::Shared*>(mem);
}

// Stops every workload the pid files under <data_dir>/workloads name. Returns how many.
int StopWorkloads(const std::string& data_dir, std::chrono::milliseconds grace) {
  launch::ProcessLauncher launcher;
  int stopped = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(data_dir + "/workloads", ec)) {
    auto record = launch::ReadPidFile((e.path() / "pid").string());
    if (!record || !*record) continue;
    const launch::ProcessId p = (*record)->process;
    if (!launcher.Alive(p) && launch::LiveMembers(p).empty()) continue;
    auto r = launcher.Stop(p, grace);
    spdlog::warn("fence: stopped workload pid {} ({}){}", p.pid, e.path().filename().string(),
                 r ? "" : ": " + r.error().message);
    ++stopped;
  }
  return stopped;
}

}  // namespace

std::chrono::milliseconds FenceAfter(std::chrono::milliseconds node_timeout,
                                     std::chrono::milliseconds heartbeat) {
  return std::max(kMinFenceAfter, (node_timeout - heartbeat - kWatchdogLatency) / 2);
}

Result<std::unique_ptr<FenceBeat>> FenceBeat::Create(const std::string& path) {
  CARVE_ASSIGN_OR_RETURN(Shared * shared, Map(path, true));
  // The pid first: a watchdog of an earlier agent on this data dir sees it and exits.
  shared->agent_pid.store(::getpid());
  shared->beat_ms.store(NowMs());
  shared->fence_after_ms.store(0);
  shared->stand_down.store(0);
  shared->fenced.store(0);
  shared->magic.store(kMagic);
  return std::unique_ptr<FenceBeat>(new FenceBeat(shared));
}

FenceBeat::~FenceBeat() { ::munmap(shared_, sizeof(Shared)); }

void FenceBeat::Beat() { shared_->beat_ms.store(NowMs()); }

void FenceBeat::Arm(std::chrono::milliseconds after) {
  shared_->fence_after_ms.store(after.count());
}

void FenceBeat::StandDown() { shared_->stand_down.store(1); }

int64_t FenceBeat::fenced() const { return shared_->fenced.load(); }

int RunFenceWatchdog(const FenceWatchOptions& o) {
  const std::string path = o.data_dir + "/fence";
  auto mapped = Map(path, false);
  if (!mapped) {
    spdlog::error("fence: {}", mapped.error().message);
    return 2;
  }
  FenceBeat::Shared& s = **mapped;
  // The agent by pid and start time, so a pid reused after its death is not mistaken for it.
  const launch::ProcessId agent{o.agent_pid, launch::ProcessStartTime(o.agent_pid)};
  launch::ProcessLauncher probe;
  bool fenced_this_silence = false;
  for (;; std::this_thread::sleep_for(o.poll)) {
    if (s.magic.load() != kMagic || s.agent_pid.load() != o.agent_pid) {
      spdlog::info("fence: {} now belongs to another agent; exiting", path);
      return 0;
    }
    if (s.stand_down.load() != 0) return 0;
    const bool agent_alive = probe.Alive(agent);
    const int64_t after = s.fence_after_ms.load();
    const int64_t silent = NowMs() - s.beat_ms.load();
    if (after > 0 && silent > after && !fenced_this_silence) {
      spdlog::warn("fence: agent {} {} for {} ms (fence after {} ms); stopping its workloads",
                   o.agent_pid, agent_alive ? "has not beaten" : "is gone", silent, after);
      s.fenced.fetch_add(StopWorkloads(o.data_dir, o.stop_grace));
      fenced_this_silence = true;
    }
    if (silent <= after) fenced_this_silence = false;
    if (!agent_alive && (after == 0 || fenced_this_silence)) return 0;
  }
}

}  // namespace carve::agent::node
