// Requests of the /v1/queues API, parsed and checked: queue create/update bodies and job
// submissions, and the planning of a submission into tasks with their shares.
//
// Two kinds of "no" are kept apart, as the issue asks:
//   - a malformed request (missing field, wrong type, unknown job type, bad name) is an error:
//     InvalidArgument naming the field, the value and the rule (HTTP 400);
//   - parameters that break a share rule (seed: core=150) are a domain outcome: the job is
//     accepted and goes to Failed with the rule's message (PlannedJob::failure).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/queues/queue_model.h"

namespace carve::server::queues {

struct CreateQueueRequest {
  std::string name;
  bool mgpu = false;
  core::Strategy strategy = core::Strategy::kBinpack;
  std::optional<Enforcement> enforcement;  // Unset: the service's default.
  bool gang = false;
  std::string instance_type;  // With count, or
  int count = 0;
  std::vector<std::string> nodes;  // node names.
};

// Body: {"name", "allocation": {"instance_type","count"} | {"nodes": [...]}, "mgpu",
// "strategy": SPREAD|BINPACK, "enforcement": interposer|mps|none, "gang"}.
Result<CreateQueueRequest> ParseCreateQueue(const nlohmann::json& body);

// Queue names: 1..63 of [A-Za-z0-9-], starting with a letter or digit.
Status ValidateQueueName(const std::string& name);

// Applies an update body to `queue`. "mgpu" may only repeat the current value: a change is
// InvalidArgument saying the switch is fixed at creation and a new queue is needed. "allocation"
// cannot change either. strategy, enforcement and gang may.
Result<QueueRecord> ApplyQueueUpdate(const QueueRecord& queue, const nlohmann::json& body);

struct GroupRequest {
  std::string name;
  int replicas = 1;
  std::optional<int64_t> core_percent;
  std::optional<int64_t> memory_mib;
};

struct JobSubmission {
  JobType type = JobType::kCustomJob;
  std::string name;
  std::vector<std::string> command;  // CustomJob; a string becomes {"/bin/sh", "-c", text}.
  int task_count = 1;                // CustomJob.
  std::string parameters;            // Seed syntax.
  int priority = 0;
  std::optional<bool> gang;  // Unset: the queue's default.
  int max_retries = 0;
  std::map<std::string, std::string> environment;
  std::string entrypoint;                   // RayJob.
  int workers = 1;                          // RayJob: worker count.
  std::vector<GroupRequest> worker_groups;  // RayCluster/RayServe (RayJob: optional).
  std::optional<GroupRequest> head;         // Head share through the API.
  std::string serve_config;                 // RayServe: what `serve deploy` takes, as text.
};

inline constexpr int kMaxTasksPerJob = 1024;
inline constexpr int kMaxRetries = 100;

// Body: {"type": "CustomJob"|"RayJob"|"RayCluster"|"RayServe", "name", "command" (string or
// argv), "task_count", "parameters", "priority", "gang", "max_retries", "environment",
// "entrypoint", "workers", "worker_groups": [{"name","replicas","core","memory_mib"}],
// "head": {"core","memory_mib"}, "serve_config" (RayServe: YAML text or a JSON object)}.
// Any other key is refused, naming the ones accepted.
Result<JobSubmission> ParseJobSubmission(const nlohmann::json& body);

struct PlannedJob {
  std::vector<TaskRecord> tasks;  // Pending, with shares; empty when failure is set.
  std::vector<std::string> warnings;
  std::string failure;  // Non-empty: the job breaks a share rule; goes to Failed with this.
};

// Resolves the parameters and API shares against the queue's mGPU switch:
//   mGPU queue, no GPU parameters   -> a full card (core=100) per task / worker;
//   non-mGPU queue                  -> whole cards only; a fractional share is a failure;
//   Ray head                        -> no GPU unless serverless.ray.head.* or "head" sets one;
//   RayJob                          -> head, workers, then the driver (entrypoint, no GPU);
//   RayServe                        -> head, workers, then the Serve deployment (no GPU).
PlannedJob PlanTasks(const JobSubmission& job, const QueueRecord& queue);

}  // namespace carve::server::queues
