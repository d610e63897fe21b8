#include "server/queues/task_workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "server/queues/serve_config.h"

namespace carve::server::queues {
namespace {

// The template the task's role runs: the job's command or one of Ray's.
std::vector<std::string> CommandOf(const TaskWorkloadInputs& in) {
  switch (in.task.role) {
    case TaskRole::kTask:
      return in.job.command;
    case TaskRole::kHead:
      return in.ray.head_command;
    case TaskRole::kWorker:
      return in.ray.worker_command;
    case TaskRole::kDriver:
      return in.ray.driver_command;
    case TaskRole::kServe:
      return in.ray.serve_command;
  }
  return {};
}

const TaskRecord* HeadOf(const JobRecord& job) {
  for (const auto& t : job.tasks) {
    if (t.role == TaskRole::kHead) return &t;
  }
  return nullptr;
}

// A Ray head's named ports, and a RayServe head's status URL (the agent reads it for the
// dashboard's answer).
void AddHeadPorts(const TaskWorkloadInputs& in, protocol::WorkloadDesired& w) {
  w.ports = {"dashboard"};
  const bool uses_serve_port = std::any_of(w.command.begin(), w.command.end(), [](const auto& a) {
    return a.find("{port_serve}") != std::string::npos;
  });
  if (in.job.type == JobType::kRayServe || uses_serve_port) w.ports.push_back("serve");
  if (in.job.type == JobType::kRayServe) {
    w.status_url = "http://127.0.0.1:{port_dashboard}/api/serve/applications/";
  }
}

// A Serve task's config, as a file with the ingress port the head was given. Empty `waiting`
// when it is ready.
TaskPlan AddServeConfig(const TaskWorkloadInputs& in, protocol::WorkloadDesired& w) {
  const TaskRecord* head = HeadOf(in.job);
  if (head == nullptr || !head->ports.contains("serve") || in.job.dashboard_url.empty()) {
    return {std::nullopt, "the head's Serve port and dashboard", false};
  }
  // Ray's dashboard starts seconds after the head's process; deploying waits until the agent
  // has read the head's Serve API once, rather than failing and backing off meanwhile. Once
  // the agent runs it, it stays published whatever the dashboard answers later.
  if (in.task.agent_state.empty() && !in.head_dashboard_answered) {
    return {std::nullopt, "the head's dashboard to answer", false};
  }
  Result<std::string> config = RenderServeConfig(in.job.serve_config, head->ports.at("serve"));
  if (!config) return {std::nullopt, config.error().message, true};
  w.files["serve_config"] = std::move(*config);
  for (auto& arg : w.command) {
    for (size_t at = arg.find("{serve_config}"); at != std::string::npos;
         at = arg.find("{serve_config}", at)) {
      arg.replace(at, 14, "{file_serve_config}");
    }
  }
  return {};
}

// A user's argument with braces ("awk '{print}'") goes through a value, so that the agent's
// single-pass template expansion leaves it exactly as written.
void QuoteUserBraces(protocol::WorkloadDesired& w) {
  for (size_t i = 0; i < w.command.size(); ++i) {
    if (w.command[i].find('{') != std::string::npos) {
      w.values[fmt::format("arg_{}", i)] = w.command[i];
      w.command[i] = fmt::format("{{arg_{}}}", i);
    }
  }
}

void AddValuesAndEnvironment(const TaskWorkloadInputs& in, protocol::WorkloadDesired& w) {
  const JobRecord& job = in.job;
  const TaskRecord& t = in.task;
  const bool ray_process = t.role != TaskRole::kTask;
  if (!job.dashboard_url.empty()) w.values["dashboard_url"] = job.dashboard_url;
  w.values["num_gpus"] = std::to_string(t.share ? t.share->card_count() : 0);
  if (!job.head_address.empty()) w.values["head_address"] = job.head_address;
  if (t.role == TaskRole::kDriver) w.values["entrypoint"] = job.entrypoint;
  if (ray_process) w.environment = in.ray.environment;
  for (const auto& [k, v] : job.environment) w.environment[k] = v;
  const auto role_count = std::count_if(job.tasks.begin(), job.tasks.end(),
                                        [&](const TaskRecord& o) { return o.role == t.role; });
  w.environment["CARVE_QUEUE"] = job.queue;
  w.environment["CARVE_JOB_ID"] = job.id;
  w.environment["CARVE_TASK_ROLE"] = NameOf(t.role);
  w.environment["CARVE_TASK_INDEX"] =
      std::to_string(t.role == TaskRole::kWorker ? t.group_index : t.index);
  w.environment["CARVE_TASK_COUNT"] = std::to_string(role_count);
  if (!job.head_address.empty()) w.environment["RAY_ADDRESS"] = job.head_address;
}

// The task's cards, and on an mGPU queue its share of one.
void AddDevice(const TaskWorkloadInputs& in, protocol::WorkloadDesired& w) {
  const TaskRecord& t = in.task;
  if (t.allocation) w.device.gpus = t.allocation->gpu_indexes;
  if (!t.share || !t.allocation || !in.queue.mgpu || t.share->whole_cards()) return;
  protocol::ShareSpec s;
  s.core_percent = t.share->core_percent;
  s.memory_mib = t.allocation->memory_mib;
  s.enforcement = t.enforcement.value_or(in.queue.enforcement);
  w.device.share = s;
  // Until the enforcement library binds them itself, the limits are also plain variables.
  w.environment["CARVE_MGPU_CORE_PERCENT"] = std::to_string(s.core_percent);
  w.environment["CARVE_MGPU_MEMORY_MIB"] = std::to_string(s.memory_mib);
}

void SetRestart(const TaskWorkloadInputs& in, protocol::WorkloadDesired& w) {
  const int retries = in.job.max_retries;
  w.restart = retries == 0 ? protocol::RestartPolicy::kNever : protocol::RestartPolicy::kOnFailure;
  w.max_retries = retries;
  if (in.task.role == TaskRole::kHead || in.task.role == TaskRole::kWorker) {
    // Ray's own processes are the cluster, not the user's work: they come back until the job
    // ends (a RayJob's driver ends it; a cluster runs until cancelled).
    w.restart = protocol::RestartPolicy::kOnFailure;
    w.max_retries = -1;
  } else if (in.task.role == TaskRole::kServe) {
    // The dashboard answers some seconds after the head starts; deploying is retried.
    w.restart = protocol::RestartPolicy::kOnFailure;
    w.max_retries = std::max(retries, kServeDeployRetries);
  }
}

}  // namespace

TaskPlan PlanTaskWorkload(const TaskWorkloadInputs& in) {
  const TaskRecord& t = in.task;
  const bool needs_head =
      t.role == TaskRole::kWorker || t.role == TaskRole::kDriver || t.role == TaskRole::kServe;
  if (needs_head && in.job.head_address.empty()) return {std::nullopt, "the head's address"};
  protocol::WorkloadDesired w;
  w.id = t.workload_id;
  w.kind = protocol::WorkloadKind::kTask;
  w.name = in.job.queue + "-" + in.job.id;
  w.index = t.index;
  w.command = CommandOf(in);
  if (t.role == TaskRole::kHead) AddHeadPorts(in, w);
  if (t.role == TaskRole::kServe) {
    if (TaskPlan waiting = AddServeConfig(in, w); !waiting.waiting.empty()) return waiting;
  }
  if (t.role != TaskRole::kTask) w.image = in.ray.ImageFor(in.job.queue);
  if (t.role == TaskRole::kTask) QuoteUserBraces(w);
  AddValuesAndEnvironment(in, w);
  AddDevice(in, w);
  SetRestart(in, w);
  w.health_check = false;
  return {std::move(w), "", false};
}

}  // namespace carve::server::queues
