// The persisted shape of mGPU queues and jobs (Store kinds "Queue" and "Job") and their JSON.
//
// A Queue record holds what the user asked for (allocation, mgpu switch, strategy, enforcement,
// gang default) and the nodes it claimed, so a restarted server re-claims exactly those nodes.
// A Job record holds the job's spec, its state and every task: share, placement (the placement
// engine's AllocationRecord, by node name and card index), the stable workload id the agent runs
// it under, and what the agent last reported. Job records are named "<queue>/<job id>".
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "common/result.h"
#include "core/placement.h"
#include "core/share.h"
#include "protocol/agent_protocol.h"
#include "server/nodes/node_claims.h"

namespace carve::server::queues {

inline constexpr std::string_view kQueueKind = "Queue";
inline constexpr std::string_view kJobKind = "Job";

// How the queue's shares are held (protocol::Enforcement, as the agents are told). kNone: the
// queue asked for unenforced shares; its workers get their limits as variables only.
using protocol::Enforcement;

struct QueueRecord {
  std::string account;
  std::string name;
  bool mgpu = false;  // Fixed at creation.
  core::Strategy strategy = core::Strategy::kBinpack;
  Enforcement enforcement = Enforcement::kInterposer;
  bool gang = false;  // Default for the queue's jobs.
  // Allocation as asked: an instance type and count, or node names.
  std::string instance_type;
  int count = 0;
  std::vector<std::string> requested_nodes;
  std::vector<std::string> nodes;  // Claimed, sorted.
  int64_t next_job_seq = 1;
  int64_t created_ms = 0;

  // Who holds the queue's nodes in NodeClaims.
  nodes::Owner Owner() const { return nodes::Owner::Queue(account, name); }
};

// Names: EnumNames below (NameOf, ParseEnum).
enum class JobType { kCustomJob, kRayJob, kRayCluster, kRayServe };

// Submitted -> Pending -> Running -> Succeeded | Failed | Cancelled. A job whose parameters break
// a share rule goes from Submitted straight to Failed.
enum class JobState { kSubmitted, kPending, kRunning, kSucceeded, kFailed, kCancelled };
bool IsTerminal(JobState s);

// Pending: waiting for a card. Placed: published to the agent, no report yet. Running: the agent
// reports it starting, running or in restart backoff. Stopped: a Ray process stopped because its
// job ended.
enum class TaskState { kPending, kPlaced, kRunning, kSucceeded, kFailed, kCancelled, kStopped };
bool IsTerminal(TaskState s);

// What a task is: a CustomJob's task, or a Ray cluster's head, worker, driver (a RayJob's
// entrypoint) or serve deployer (a RayServe's config).
enum class TaskRole { kTask, kHead, kWorker, kDriver, kServe };

struct TaskRecord {
  int index = 0;  // Within the job, stable.
  TaskRole role = TaskRole::kTask;
  std::string group;  // Ray worker group name; "" otherwise.
  int group_index = 0;
  TaskState state = TaskState::kPending;
  // The share; nullopt: the task uses no GPU (a Ray head without head parameters, the driver).
  std::optional<core::MgpuShare> share;
  int attempt = 0;          // Bumped on each placement; part of the workload id.
  std::string workload_id;  // "" until placed.
  std::optional<core::AllocationRecord> allocation;
  // The queue's enforcement when this attempt was placed: a queue's later change applies to the
  // tasks placed after it, not to one already running (docs/mgpu.md). nullopt in records from
  // before it was kept: the queue's current one.
  std::optional<Enforcement> enforcement;
  std::string node;       // Where it runs (the allocation's node, or the head's node).
  std::vector<int> gpus;  // Cards it was placed on (kept after the allocation is freed).
  // What the agent last reported.
  std::string agent_state;
  std::vector<int> exit_codes;
  int restarts = 0;
  std::string message;
  std::string log_dir;
  std::string address;  // Ray head: "host:port".
  std::map<std::string, int> ports;  // Ray head: its named ports ("dashboard", "serve").
  // Why the task was last placed again after its node stopped reporting; "" if never.
  std::string rescheduled;
};

// A RayServe job's application, as the head's Serve REST API reports it
// (GET /api/serve/applications/).
struct ServeApplication {
  std::string name;
  std::string status;  // Ray's: NOT_STARTED, DEPLOYING, DEPLOY_FAILED, RUNNING, UNHEALTHY, ...
  std::string route_prefix;
  std::string message;
  friend bool operator==(const ServeApplication&, const ServeApplication&) = default;
};

// What carve knows of a RayServe job's Serve deployment.
//   status: WAITING_FOR_CLUSTER (no head yet), DEPLOYING (the Serve command runs, or Ray
//   deploys), RUNNING (every application runs), DEPLOY_FAILED, UNHEALTHY (any application is),
//   UNKNOWN (the head's dashboard did not answer, message says why).
struct ServeStatus {
  std::string status;
  std::string message;
  std::string ingress;  // "http://host:port" of the Serve HTTP proxy, once the head has its port
  std::vector<ServeApplication> applications;
  friend bool operator==(const ServeStatus&, const ServeStatus&) = default;
};

struct JobRecord {
  std::string account;
  std::string queue;
  std::string id;    // "job-0001"
  std::string name;  // User's label (optional).
  JobType type = JobType::kCustomJob;
  JobState state = JobState::kSubmitted;
  std::string reason;  // Why Failed / Cancelled, or why still Pending.
  int priority = 0;    // Higher first; FIFO (seq) within a priority.
  bool gang = false;
  int64_t seq = 0;
  int max_retries = 0;
  std::vector<std::string> command;  // CustomJob argv.
  std::string entrypoint;            // RayJob.
  std::string parameters;            // The parameter text, as submitted.
  std::map<std::string, std::string> environment;
  std::vector<std::string> warnings;
  std::string head_address;  // Ray: the head's address once it reports one.
  std::string dashboard_url;  // Ray: http://host:port of the head's dashboard, likewise.
  std::string serve_config;   // RayServe: the Serve config as submitted (YAML or JSON text).
  ServeStatus serve;          // RayServe.
  int64_t submitted_ms = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  std::vector<TaskRecord> tasks;

  std::string StoreName() const { return queue + "/" + id; }
};

nlohmann::json ToJson(const QueueRecord& q);
nlohmann::json ToJson(const JobRecord& j);
nlohmann::json ToJson(const TaskRecord& t);
nlohmann::json ToJson(const ServeStatus& s);
// InvalidArgument naming the field when a stored body does not parse.
Result<QueueRecord> QueueFromJson(const nlohmann::json& j);
Result<JobRecord> JobFromJson(const nlohmann::json& j);

}  // namespace carve::server::queues

namespace carve {
template <>
struct EnumNames<server::queues::TaskRole> {
  static constexpr std::array<std::string_view, 5> kNames = {"task", "head", "worker", "driver",
                                                             "serve"};
};
template <>
struct EnumNames<server::queues::JobType> {
  static constexpr std::array<std::string_view, 4> kNames = {"CustomJob", "RayJob", "RayCluster",
                                                             "RayServe"};
};
template <>
struct EnumNames<server::queues::JobState> {
  static constexpr std::array<std::string_view, 6> kNames = {"Submitted", "Pending", "Running",
                                                             "Succeeded", "Failed",  "Cancelled"};
};
template <>
struct EnumNames<server::queues::TaskState> {
  static constexpr std::array<std::string_view, 7> kNames = {
      "Pending", "Placed", "Running", "Succeeded", "Failed", "Cancelled", "Stopped"};
};
}  // namespace carve
