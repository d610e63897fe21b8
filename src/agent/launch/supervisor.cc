#include "agent/launch/supervisor.h"

#include <algorithm>

namespace carve::launch {

Supervisor::Supervisor(std::string copy, Launcher& launcher, const Clock& clock,
                       LaunchRequest request, RestartRules rules, EventSink sink)
    : copy_(std::move(copy)),
      launcher_(launcher),
      clock_(clock),
      request_(std::move(request)),
      rules_(rules),
      sink_(std::move(sink)) {}

Status Supervisor::Start() {
  Result<ProcessId> p = launcher_.Start(request_);
  if (!p) {
    state_ = CopyState::kFailed;
    return p.error();
  }
  process_ = *p;
  adopted_ = false;
  started_at_ = clock_.Now();
  state_ = CopyState::kRunning;
  return OkStatus();
}

void Supervisor::Adopt(const ProcessId& process) {
  process_ = process;
  adopted_ = true;
  started_at_ = clock_.Now();
  state_ = CopyState::kRunning;
}

std::chrono::milliseconds Supervisor::BackoffFor(int consecutive) const {
  auto d = rules_.initial_backoff;
  for (int i = 1; i < consecutive && d < rules_.max_backoff; ++i) d *= 2;
  return std::min(d, rules_.max_backoff);
}

void Supervisor::OnExit(int status) {
  exit_codes_.push_back(status);
  if (process_) {
    if (auto left = launcher_.Stop(*process_, rules_.leftover_grace); !left) {
      sink_({copy_, status, std::nullopt,
             "copy " + copy_ + ": stopping what its leader left behind: " + left.error().message});
    }
  }
  process_.reset();
  const bool failed = status != 0;
  bool restart = false;
  switch (rules_.policy) {
    case RestartPolicy::kAlways:
      restart = true;
      break;
    case RestartPolicy::kOnFailure:
      restart = failed && (rules_.max_retries < 0 || restarts_ < rules_.max_retries);
      break;
    case RestartPolicy::kNever:
      break;
  }
  const std::string what = status < 0 ? "exited (status unknown: adopted process)"
                                      : "exited with status " + std::to_string(status);
  if (!restart) {
    state_ = failed ? CopyState::kFailed : CopyState::kSucceeded;
    std::string why =
        rules_.policy == RestartPolicy::kOnFailure && failed
            ? ", not restarting: " + std::to_string(rules_.max_retries) + " retries used"
            : ", not restarting";
    sink_({copy_, status, std::nullopt, "copy " + copy_ + " " + what + why});
    return;
  }
  if (clock_.Now() - started_at_ >= rules_.stable_after) consecutive_ = 0;
  ++consecutive_;
  const auto wait = BackoffFor(consecutive_);
  restart_at_ = clock_.Now() + wait;
  state_ = CopyState::kBackoff;
  sink_({copy_, status, wait,
         "copy " + copy_ + " " + what + ", restarting in " + std::to_string(wait.count()) + " ms"});
}

Status Supervisor::Poll() {
  if (state_ == CopyState::kRunning && process_) {
    if (adopted_) {
      if (!launcher_.Alive(*process_)) OnExit(-1);
    } else if (auto status = launcher_.TryWait(*process_)) {
      OnExit(*status);
    }
  }
  if (state_ == CopyState::kBackoff && clock_.Now() >= restart_at_) {
    ++restarts_;
    Result<ProcessId> p = launcher_.Start(request_);
    if (!p) {
      restart_at_ = clock_.Now() + BackoffFor(++consecutive_);
      return p.error();
    }
    process_ = *p;
    adopted_ = false;
    started_at_ = clock_.Now();
    state_ = CopyState::kRunning;
  }
  return OkStatus();
}

Status Supervisor::Stop(std::chrono::milliseconds grace) {
  state_ = CopyState::kStopped;
  if (!process_) return OkStatus();
  Result<std::optional<int>> r = launcher_.Stop(*process_, grace);
  if (!r) return r.error();
  if (r->has_value()) exit_codes_.push_back(**r);
  process_.reset();
  return OkStatus();
}

}  // namespace carve::launch
