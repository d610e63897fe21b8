// Supervisor: keeps one workload copy running through a Launcher, restarting it after a crash
// with exponential backoff, or collecting its exit code when it is a job task that must not
// restart. Time comes from an injected Clock; nothing sleeps: the agent calls Poll() from its
// loop (tests call it after advancing a FakeClock).
//
// Backoff: the n-th consecutive restart waits initial_backoff x 2^(n-1), capped at max_backoff
// (1 s, 2 s, 4 s ... 60 s by default). A copy that ran for at least `stable_after` before
// exiting starts again from initial_backoff.
//
// Events go to the callback, e.g. "copy ic-a/0 exited with status 3, restarting in 2000 ms".
// Not thread-safe: one owner thread drives it.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/launch/launcher.h"
#include "common/clock.h"

namespace carve::launch {

enum class RestartPolicy { kAlways, kOnFailure, kNever };

struct RestartRules {
  RestartPolicy policy = RestartPolicy::kAlways;
  int max_retries = -1;  // kOnFailure: restarts allowed after failures; -1 unlimited
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{60'000};
  std::chrono::milliseconds stable_after{60'000};
  // When the leader exits, whatever it left behind (children, a setsid'd daemon) is stopped
  // with this grace before the copy restarts or ends, so no run outlives its leader.
  std::chrono::milliseconds leftover_grace{2000};
};

struct SupervisorEvent {
  std::string copy;
  int exit_status = 0;  // -1 when unknown (an adopted process that vanished)
  std::optional<std::chrono::milliseconds> restart_in;  // nullopt: no restart
  std::string message;
};

enum class CopyState { kStarting, kRunning, kBackoff, kSucceeded, kFailed, kStopped };

class Supervisor {
 public:
  using EventSink = std::function<void(const SupervisorEvent&)>;
  Supervisor(std::string copy, Launcher& launcher, const Clock& clock, LaunchRequest request,
             RestartRules rules, EventSink sink);

  // Starts the first process. Errors are the launcher's; the state is kFailed then.
  Status Start();
  // Takes over a live process found after an agent restart (see pid_file.h) instead of starting.
  void Adopt(const ProcessId& process);
  // Notices an exit, schedules or performs a due restart. Returns the launcher's error when a
  // restart could not start (the copy stays in backoff and is retried later).
  Status Poll();
  // Stops the process (SIGTERM, SIGKILL after grace); no restart follows.
  Status Stop(std::chrono::milliseconds grace);

  CopyState state() const { return state_; }
  std::optional<ProcessId> process() const { return process_; }
  const std::vector<int>& exit_codes() const { return exit_codes_; }
  int restarts() const { return restarts_; }

 private:
  void OnExit(int status);
  std::chrono::milliseconds BackoffFor(int consecutive) const;

  const std::string copy_;
  Launcher& launcher_;
  const Clock& clock_;
  const LaunchRequest request_;
  const RestartRules rules_;
  const EventSink sink_;

  CopyState state_ = CopyState::kStarting;
  std::optional<ProcessId> process_;
  bool adopted_ = false;  // not our child: exit seen through Alive(), status unknown
  std::chrono::steady_clock::time_point started_at_{};
  std::chrono::steady_clock::time_point restart_at_{};
  int consecutive_ = 0;  // restarts since the copy last ran stably
  int restarts_ = 0;
  std::vector<int> exit_codes_;
};

}  // namespace carve::launch
