// GpuApplier: makes each GPU of the node carry what the desired state says (a MIG layout, or
// the whole card), one GPU at a time, through the Carver and its safety rules.
//
// Idempotent: an entry already applied is not touched again, and a GPU whose live carve already
// matches is adopted without NVML changes (same instances, same MIG uuids). A GPU that cannot
// be carved (our workloads run on it, a MIG mode change waits for a reset, NVML fails) keeps
// the error in its GpuStatus and is NOT retried every loop: only when its desired entry
// changes, when the set of our workloads on it changes (the work that blocked it left), or
// after `retry_after`. Each failed attempt yields one event.
//
// Not thread-safe: the agent's apply loop owns it (and, through it, the Nvml).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/mig/carver.h"
#include "agent/nvml/nvml.h"
#include "common/clock.h"
#include "protocol/agent_protocol.h"

namespace carve::agent::node {

class GpuApplier {
 public:
  GpuApplier(Nvml& nvml, const Clock& clock,
             std::chrono::milliseconds retry_after = std::chrono::minutes(5));

  // Reads the GPU count and each GPU's identity (uuid, memory). Errors are the node-level NVML
  // failures; a single lost GPU is kept with an empty uuid and reported in its status.
  Status Init();

  // Applies every desired entry. `busy` names our workloads per GPU index. Returns one event
  // line per attempt that failed.
  std::vector<std::string> Apply(const std::vector<protocol::GpuDesired>& desired,
                                 const std::map<int, std::vector<std::string>>& busy);

  // The MIG device of the partition of `gpu` that starts at placement slice `start`.
  // FailedPrecondition while the GPU is not carved as desired (the message says why),
  // NotFound when no partition starts there.
  Result<std::string> PartitionUuid(int gpu, int start) const;
  // "GPU-..." of the card; NotFound for an unknown or unreadable GPU.
  Result<std::string> GpuUuid(int gpu) const;
  Result<int64_t> GpuMemoryMib(int gpu) const;
  int gpu_count() const { return static_cast<int>(gpus_.size()); }

  // One status per GPU. `with_metrics` adds utilization and per-process memory from NVML.
  std::vector<protocol::GpuStatus> Statuses(bool with_metrics);
  // True when every desired entry is applied.
  bool AllApplied() const;

  // Simulated drivers only: how long each GPU's re-carve takes (a real MIG reconfiguration
  // takes seconds; demos and restart tests need to observe an endpoint while it carves).
  // `wait` spends it and answers false when the agent is stopping: Apply then returns at once,
  // leaving the GPUs it has not reached as they were (a stop never waits for a simulated carve).
  using Waiter = std::function<bool(std::chrono::milliseconds)>;
  void set_carve_delay(std::chrono::milliseconds d, Waiter wait = {}) {
    carve_delay_ = d;
    carve_wait_ = std::move(wait);
  }

 private:
  struct Gpu {
    std::string uuid;
    int64_t memory_mib = 0;
    std::optional<protocol::GpuDesired> desired;   // the last entry asked for
    std::optional<protocol::GpuDesired> applied;   // the entry in force
    std::vector<CarvedInstance> carved;            // when applied with mig
    // Last failed attempt: what was asked, which workloads blocked it, and when.
    std::optional<protocol::GpuDesired> failed;
    std::vector<std::string> failed_busy;
    std::chrono::steady_clock::time_point failed_at{};
    std::string error;
    bool pending_reset = false;
  };

  Status ApplyOne(int index, Gpu& gpu, const protocol::GpuDesired& want,
                  const std::vector<std::string>& busy);
  Result<bool> LiveMatches(int index, const protocol::GpuDesired& want);
  Result<std::vector<protocol::CarvedPartition>> LivePartitions(int index);

  Nvml& nvml_;
  const Clock& clock_;
  const std::chrono::milliseconds retry_after_;
  std::chrono::milliseconds carve_delay_{0};
  Waiter carve_wait_;
  Carver carver_;
  std::vector<Gpu> gpus_;
};

}  // namespace carve::agent::node
