// The queue's GPU view ("Queue Monitoring > GPU Resources"): per card and per worker, what is
// allocated (the shares placed) next to what the enforcement layer measures as used (from the
// agent's WorkloadStatus / GpuStatus). A measure the agent does not have is nullopt and is shown
// as "not measured", never as 0.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace carve::server::queues {

struct WorkerView {
  std::string job;
  int task = 0;
  std::string role;
  std::string workload_id;
  std::string state;
  int core_limit_percent = 0;    // The share's core (100 for a whole card).
  int64_t memory_limit_mib = 0;  // Card memory reserved for it (whole card: card memory).
  std::optional<double> core_used_percent;  // Achieved compute share of the card.
  std::optional<int64_t> memory_used_mib;
};

struct CardView {
  std::string node;
  int gpu = 0;
  std::string model;
  int64_t memory_capacity_mib = 0;  // Shareable memory (card memory less the reserve).
  int core_allocated_percent = 0;
  int64_t memory_allocated_mib = 0;
  int workers = 0;
  std::optional<int> utilization_percent;  // Whole card, as NVML reports it.
  std::optional<int64_t> memory_used_mib;
  std::vector<WorkerView> worker_views;
};

struct QueueGpuView {
  std::string account;
  std::string queue;
  bool mgpu = false;
  std::string enforcement;
  std::vector<CardView> cards;
  int core_allocated_percent = 0;  // Sums over cards.
  int core_capacity_percent = 0;
  int64_t memory_allocated_mib = 0;
  int64_t memory_capacity_mib = 0;
  int workers = 0;
};

nlohmann::json ToJson(const QueueGpuView& view);

}  // namespace carve::server::queues
