// Fence: bounds how long a node's workloads outlive an agent that stopped answering.
//
// When an agent freezes (SIGSTOP, a frozen cgroup) or dies, the server declares its node NotReady
// after the node timeout and places the node's copies elsewhere; without a fence the old copies
// keep running beside the new ones until an agent comes back, however long that takes. So the
// agent starts a watchdog, `carve agent-fence`, in its own session, and beats a heartbeat into a
// small shared file (<data_dir>/fence) every beat interval. When the beat is older than
// `fence_after` (FenceAfter: safely inside the node timeout, so before the server moves
// anything), the watchdog stops every workload the agent's pid files name. Old and new copies
// then never run at the same time; the price is that an agent frozen longer than fence_after
// but shorter than the node timeout finds its copies stopped, and starts them again.
//
// A clean agent stop (SIGTERM) stands the watchdog down first, so an agent restarted on purpose
// still adopts its running workloads. The fence is not armed until the agent has registered
// (it learns the node timeout from the server). A watchdog whose agent is gone fences (if armed)
// and exits; one whose file a newer agent took over exits at once.
//
// The file holds lock-free atomics only; steady_clock (CLOCK_MONOTONIC) is the same clock in
// every process. FenceBeat is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

namespace carve::agent::node {

// The fence delay for a server's node timeout and heartbeat interval: the server can declare a
// node NotReady as early as (node_timeout - heartbeat) after its agent froze, and the watchdog
// needs up to one poll plus the stop grace to act. Half of that window, at least 300 ms.
std::chrono::milliseconds FenceAfter(std::chrono::milliseconds node_timeout,
                                     std::chrono::milliseconds heartbeat);

// The agent's side: the heartbeat file.
class FenceBeat {
 public:
  // Creates (or takes over) <path> for this agent process, disarmed.
  static Result<std::unique_ptr<FenceBeat>> Create(const std::string& path);
  ~FenceBeat();
  FenceBeat(const FenceBeat&) = delete;
  FenceBeat& operator=(const FenceBeat&) = delete;

  void Beat();
  // Workloads are fenced once the beat is older than `after`; zero disarms.
  void Arm(std::chrono::milliseconds after);
  // Tells the watchdog to exit without fencing (a clean agent stop).
  void StandDown();
  // How many workloads the watchdog has stopped so far (the agent reports new ones).
  int64_t fenced() const;

  struct Shared;

 private:
  explicit FenceBeat(Shared* shared) : shared_(shared) {}
  Shared* shared_;
};

struct FenceWatchOptions {
  std::string data_dir;  // the agent's: <data_dir>/fence and <data_dir>/workloads/*/pid
  int agent_pid = 0;
  std::chrono::milliseconds poll{100};
  std::chrono::milliseconds stop_grace{500};  // SIGTERM to SIGKILL for fenced workloads
};

// The watchdog's loop (`carve agent-fence`). Returns its exit code: 0 when stood down,
// superseded or done after its agent died; 2 when the fence file cannot be opened.
int RunFenceWatchdog(const FenceWatchOptions& options);

}  // namespace carve::agent::node
