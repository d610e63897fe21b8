// What a queue task runs on its node, as a pure plan: a function of the task, its job, its queue
// and the server's Ray templates, with no Store, registry or clock. QueueService::Publish is the
// applier: it hands each node's planned workloads to the registry, and only what changed.
//
// A plain task runs the job's command (a user's argument with braces goes through a value, so
// the agent's one-pass template expansion leaves it as written). A Ray head, worker or driver
// runs the server's templates in the Ray image, and waits for the head's address; a RayServe
// job's Serve task deploys its config once the head's dashboard answered. An mGPU share names
// its card, core percent, memory quota and enforcement.
#pragma once

#include <optional>
#include <string>

#include "protocol/agent_protocol.h"
#include "server/queues/queue_model.h"
#include "server/queues/ray_runtime.h"

namespace carve::server::queues {

// Tries of the Serve command before a RayServe job fails.
inline constexpr int kServeDeployRetries = 10;

struct TaskWorkloadInputs {
  const QueueRecord& queue;
  const JobRecord& job;
  const TaskRecord& task;
  const RayRuntime& ray;
  // A Serve task's: the agent has read the head's Serve API once (its dashboard is up).
  bool head_dashboard_answered = false;
};

struct TaskPlan {
  std::optional<protocol::WorkloadDesired> workload;  // nullopt: not published yet.
  std::string waiting;  // Why not: "the head's address", "the head's dashboard", ...
  bool broken = false;  // `waiting` is an error worth a log line (a Serve config that fails).
};

TaskPlan PlanTaskWorkload(const TaskWorkloadInputs& in);

}  // namespace carve::server::queues
