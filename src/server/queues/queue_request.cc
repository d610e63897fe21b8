// Parsing and planning of queue and job requests. Every message names the field, the value and
// the rule; nothing here throws.
#include "server/queues/queue_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "common/bounded_json.h"
#include "core/mgpu_params.h"
#include "protocol/launch_inputs.h"
#include "server/queues/serve_config.h"

namespace carve::server::queues {
namespace {

using nlohmann::json;

// A caller's value in a message: bounded in length and depth, never dump()ed whole.
std::string Shown(const json& v) { return JsonPreview(v); }

Result<std::optional<std::string>> OptString(const json& body, const char* field) {
  if (!body.contains(field) || body.at(field).is_null()) return std::optional<std::string>();
  const json& v = body.at(field);
  if (!v.is_string()) {
    return InvalidArgument(fmt::format("{}={}: must be a string", field, Shown(v)));
  }
  return std::optional<std::string>(v.get<std::string>());
}

Result<std::optional<int64_t>> OptInt(const json& body, const char* field, int64_t lo, int64_t hi) {
  if (!body.contains(field) || body.at(field).is_null()) return std::optional<int64_t>();
  const json& v = body.at(field);
  if (!v.is_number_integer()) {
    return InvalidArgument(fmt::format("{}={}: must be a whole number", field, Shown(v)));
  }
  const int64_t n = v.get<int64_t>();
  if (n < lo || n > hi) {
    return InvalidArgument(fmt::format("{}={}: must be {}..{}", field, n, lo, hi));
  }
  return std::optional<int64_t>(n);
}

Result<std::optional<bool>> OptBool(const json& body, const char* field) {
  if (!body.contains(field) || body.at(field).is_null()) return std::optional<bool>();
  const json& v = body.at(field);
  if (!v.is_boolean()) {
    return InvalidArgument(fmt::format("{}={}: must be true or false", field, Shown(v)));
  }
  return std::optional<bool>(v.get<bool>());
}

// A worker group ("worker_groups[i]") or the head ("head"): a field it does not have is refused
// naming it, as at the top level, and every error names the field under `where`.
Result<GroupRequest> ParseGroup(const json& g, const std::string& where) {
  if (!g.is_object()) return InvalidArgument(where + ": must be an object");
  const bool head = where == "head";
  static constexpr std::string_view kGroupKeys[] = {"name", "replicas", "core", "memory_mib"};
  const std::span<const std::string_view> keys =
      head ? std::span(kGroupKeys).subspan(2) : std::span(kGroupKeys);
  for (const auto& [key, value] : g.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      return InvalidArgument(fmt::format("{}.{}: not a field of {}; the fields are {}", where,
                                         TextPreview(key, 64), head ? "the head" : "a worker group",
                                         fmt::join(keys, ", ")));
    }
  }
  auto named = [&](const Error& e) { return InvalidArgument(where + "." + e.message); };
  GroupRequest out;
  auto name = OptString(g, "name");
  if (!name.has_value()) return named(name.error());
  out.name = name->value_or("");
  auto replicas = OptInt(g, "replicas", 1, kMaxTasksPerJob);
  if (!replicas.has_value()) return named(replicas.error());
  out.replicas = static_cast<int>(replicas->value_or(1));
  // Range rules (5..100, multiples of 100, >= 256 MiB) are share rules: checked by PlanTasks so
  // that breaking them fails the job rather than the request.
  auto core = OptInt(g, "core", INT64_MIN, INT64_MAX);
  if (!core.has_value()) return named(core.error());
  out.core_percent = *core;
  auto memory = OptInt(g, "memory_mib", INT64_MIN, INT64_MAX);
  if (!memory.has_value()) return named(memory.error());
  out.memory_mib = *memory;
  return out;
}

// The last statement that sets `key`, for messages; nullptr when none.
const core::MgpuParam* LastParam(const core::ParsedMgpuParams& parsed, std::string_view key) {
  const core::MgpuParam* found = nullptr;
  for (const auto& p : parsed.statements) {
    if (p.key == key) found = &p;
  }
  return found;
}

TaskRecord MakeTask(TaskRole role, std::optional<core::MgpuShare> share) {
  TaskRecord t;
  t.role = role;
  t.share = share;
  return t;
}

// On a queue without mGPU only whole cards exist; names the parameter that asked for less.
std::string WholeCardsOnly(const std::optional<core::MgpuShare>& share, std::string_view what,
                           const QueueRecord& queue) {
  if (queue.mgpu || !share || share->whole_cards()) return "";
  return fmt::format(
      "{}: queue '{}' was created without mGPU, so its jobs get whole cards only (core=100 per "
      "card, e.g. serverless.custom.job.task.gpus=1); a fraction of a card needs a queue created "
      "with mgpu=true",
      what, queue.name);
}

std::string Described(const core::ParsedMgpuParams& parsed, std::string_view core_key,
                      const core::MgpuShare& share) {
  const core::MgpuParam* p = LastParam(parsed, core_key);
  if (p != nullptr) return p->key + "=" + p->value;
  return fmt::format("{} ({})", core_key, share.ToString());
}

}  // namespace

Status ValidateQueueName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 63 && name.front() != '-';
  for (char c : name) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-');
  }
  if (!ok) {
    return InvalidArgument(fmt::format(
        "name='{}': a queue name is 1..63 letters, digits or '-', not starting with '-'", name));
  }
  return OkStatus();
}

Result<CreateQueueRequest> ParseCreateQueue(const json& body) {
  if (!body.is_object()) return InvalidArgument("request body: must be a JSON object");
  CreateQueueRequest r;
  CARVE_ASSIGN_OR_RETURN(auto name, OptString(body, "name"));
  if (!name) return InvalidArgument("name: required (the queue's name)");
  r.name = *name;
  CARVE_RETURN_IF_ERROR(ValidateQueueName(r.name));
  CARVE_ASSIGN_OR_RETURN(auto mgpu, OptBool(body, "mgpu"));
  r.mgpu = mgpu.value_or(false);
  CARVE_ASSIGN_OR_RETURN(auto gang, OptBool(body, "gang"));
  r.gang = gang.value_or(false);
  CARVE_ASSIGN_OR_RETURN(auto strategy, OptString(body, "strategy"));
  if (strategy) {
    auto s = core::ParseStrategy(*strategy);
    if (!s.has_value()) return InvalidArgument("strategy: " + s.error().message);
    r.strategy = *s;
  }
  CARVE_ASSIGN_OR_RETURN(auto enforcement, OptString(body, "enforcement"));
  if (enforcement) {
    CARVE_ASSIGN_OR_RETURN(r.enforcement, ParseEnum<Enforcement>(*enforcement, "enforcement"));
  }
  if (!body.contains("allocation") || !body.at("allocation").is_object()) {
    return InvalidArgument(
        "allocation: required, {\"instance_type\": T, \"count\": N} or {\"nodes\": [names]}");
  }
  const json& a = body.at("allocation");
  CARVE_ASSIGN_OR_RETURN(auto type, OptString(a, "instance_type"));
  const bool has_nodes = a.contains("nodes");
  if (type.has_value() == has_nodes) {
    return InvalidArgument(
        "allocation: give either instance_type with count, or nodes (a list of node names)");
  }
  if (type) {
    r.instance_type = *type;
    CARVE_ASSIGN_OR_RETURN(auto count, OptInt(a, "count", 1, 1024));
    r.count = static_cast<int>(count.value_or(1));
    return r;
  }
  const json& nodes = a.at("nodes");
  if (!nodes.is_array() || nodes.empty()) {
    return InvalidArgument("allocation.nodes=" + Shown(nodes) + ": must be a non-empty list");
  }
  for (const auto& n : nodes) {
    if (!n.is_string() || n.get<std::string>().empty()) {
      return InvalidArgument("allocation.nodes: " + Shown(n) + " is not a node name");
    }
    r.nodes.push_back(n.get<std::string>());
  }
  return r;
}

Result<QueueRecord> ApplyQueueUpdate(const QueueRecord& queue, const json& body) {
  if (!body.is_object()) return InvalidArgument("request body: must be a JSON object");
  QueueRecord q = queue;
  CARVE_ASSIGN_OR_RETURN(auto mgpu, OptBool(body, "mgpu"));
  if (mgpu && *mgpu != queue.mgpu) {
    return InvalidArgument(fmt::format(
        "mgpu={}: the mGPU switch is fixed when a queue is created (queue '{}' has mgpu={}); "
        "create a new queue with mgpu={} instead",
        *mgpu, queue.name, queue.mgpu, *mgpu));
  }
  if (body.contains("allocation")) {
    return InvalidArgument(fmt::format(
        "allocation: a queue keeps the nodes it was created with (queue '{}' holds {}); create "
        "a new queue for another allocation",
        queue.name, fmt::join(queue.nodes, ", ")));
  }
  if (body.contains("name") && body.at("name") != json(queue.name)) {
    return InvalidArgument("name=" + Shown(body.at("name")) + ": a queue cannot be renamed");
  }
  CARVE_ASSIGN_OR_RETURN(auto strategy, OptString(body, "strategy"));
  if (strategy) {
    auto s = core::ParseStrategy(*strategy);
    if (!s.has_value()) return InvalidArgument("strategy: " + s.error().message);
    q.strategy = *s;
  }
  CARVE_ASSIGN_OR_RETURN(auto enforcement, OptString(body, "enforcement"));
  if (enforcement) {
    CARVE_ASSIGN_OR_RETURN(q.enforcement, ParseEnum<Enforcement>(*enforcement, "enforcement"));
  }
  CARVE_ASSIGN_OR_RETURN(auto gang, OptBool(body, "gang"));
  if (gang) q.gang = *gang;
  return q;
}

namespace {

Result<std::map<std::string, std::string>> ParseEnvironment(const json& env) {
  if (!env.is_object()) return InvalidArgument("environment: must be an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : env.items()) {
    if (!v.is_string()) {
      return InvalidArgument(fmt::format("environment.{}={}: must be a string", k, Shown(v)));
    }
    out[k] = v.get<std::string>();
  }
  // The same launch rules as CreateModel's Environment (docs/security.md, Launch inputs).
  CARVE_RETURN_IF_ERROR(protocol::CheckEnvironment(out, "environment"));
  return out;
}

Result<std::vector<std::string>> ParseCommand(const json& c) {
  if (c.is_string() && !c.get<std::string>().empty()) {
    return std::vector<std::string>{"/bin/sh", "-c", c.get<std::string>()};
  }
  if (!c.is_array() || c.empty()) {
    return InvalidArgument("command=" + Shown(c) + ": must be a non-empty string or list");
  }
  std::vector<std::string> out;
  for (const auto& a : c) {
    if (!a.is_string()) return InvalidArgument("command: " + Shown(a) + " is not a string");
    out.push_back(a.get<std::string>());
  }
  return out;
}

// The Ray fields: workers, worker_groups, head and serve_config.
Status ParseRayFields(const json& body, JobSubmission& s) {
  CARVE_ASSIGN_OR_RETURN(auto entrypoint, OptString(body, "entrypoint"));
  s.entrypoint = entrypoint.value_or("");
  CARVE_ASSIGN_OR_RETURN(auto workers, OptInt(body, "workers", 0, kMaxTasksPerJob));
  s.workers = static_cast<int>(workers.value_or(1));
  if (body.contains("worker_groups")) {
    const json& groups = body.at("worker_groups");
    if (!groups.is_array()) return InvalidArgument("worker_groups: must be a list");
    for (size_t i = 0; i < groups.size(); ++i) {
      CARVE_ASSIGN_OR_RETURN(GroupRequest g,
                             ParseGroup(groups[i], fmt::format("worker_groups[{}]", i)));
      if (g.name.empty()) g.name = fmt::format("group-{}", i);
      s.worker_groups.push_back(std::move(g));
    }
  }
  if (body.contains("head")) {
    CARVE_ASSIGN_OR_RETURN(s.head, ParseGroup(body.at("head"), "head"));
  }
  if (!body.contains("serve_config")) return OkStatus();
  const json& c = body.at("serve_config");
  if (c.is_object()) {
    s.serve_config = c.dump();
  } else if (c.is_string()) {
    s.serve_config = c.get<std::string>();
  } else {
    return InvalidArgument("serve_config=" + Shown(c) +
                           ": must be the Serve config as YAML text or a JSON object");
  }
  if (s.type != JobType::kRayServe) {
    return InvalidArgument(
        fmt::format("serve_config: only a RayServe job deploys one, not a {}", NameOf(s.type)));
  }
  return ValidateServeConfig(s.serve_config);
}

// What each job type requires.
Status CheckRequiredFields(const JobSubmission& s) {
  switch (s.type) {
    case JobType::kCustomJob:
      if (s.command.empty()) return InvalidArgument("command: required for a CustomJob");
      break;
    case JobType::kRayJob:
      if (s.entrypoint.empty()) return InvalidArgument("entrypoint: required for a RayJob");
      break;
    case JobType::kRayCluster:
    case JobType::kRayServe:
      if (s.type == JobType::kRayServe && s.serve_config.empty()) {
        return InvalidArgument(
            "serve_config: required for a RayServe job (the config `serve deploy` takes)");
      }
      if (s.worker_groups.empty()) {
        return InvalidArgument(
            fmt::format("worker_groups: a {} needs at least one worker group", NameOf(s.type)));
      }
      break;
  }
  return OkStatus();
}

}  // namespace

Result<JobSubmission> ParseJobSubmission(const json& body) {
  if (!body.is_object()) return InvalidArgument("request body: must be a JSON object");
  static constexpr std::string_view kKeys[] = {
      "type",     "name",          "command",     "task_count",  "parameters",
      "priority", "gang",          "max_retries", "environment", "entrypoint",
      "workers",  "worker_groups", "head",        "serve_config"};
  for (const auto& [key, value] : body.items()) {
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      return InvalidArgument(fmt::format("{}: not a field of a job submission; the fields are {}",
                                         TextPreview(key, 64), fmt::join(kKeys, ", ")));
    }
  }
  JobSubmission s;
  CARVE_ASSIGN_OR_RETURN(auto type, OptString(body, "type"));
  if (type) {
    CARVE_ASSIGN_OR_RETURN(s.type, ParseEnum<JobType>(*type, "type"));
  }
  CARVE_ASSIGN_OR_RETURN(auto name, OptString(body, "name"));
  s.name = name.value_or("");
  CARVE_ASSIGN_OR_RETURN(auto params, OptString(body, "parameters"));
  s.parameters = params.value_or("");
  CARVE_ASSIGN_OR_RETURN(auto priority, OptInt(body, "priority", -1000, 1000));
  s.priority = static_cast<int>(priority.value_or(0));
  CARVE_ASSIGN_OR_RETURN(s.gang, OptBool(body, "gang"));
  CARVE_ASSIGN_OR_RETURN(auto retries, OptInt(body, "max_retries", -1, kMaxRetries));
  s.max_retries = static_cast<int>(retries.value_or(0));
  if (body.contains("environment")) {
    CARVE_ASSIGN_OR_RETURN(s.environment, ParseEnvironment(body.at("environment")));
  }
  if (body.contains("command")) {
    CARVE_ASSIGN_OR_RETURN(s.command, ParseCommand(body.at("command")));
  }
  CARVE_ASSIGN_OR_RETURN(auto count, OptInt(body, "task_count", 1, kMaxTasksPerJob));
  s.task_count = static_cast<int>(count.value_or(1));
  CARVE_RETURN_IF_ERROR(ParseRayFields(body, s));
  CARVE_RETURN_IF_ERROR(CheckRequiredFields(s));
  return s;
}

PlannedJob PlanTasks(const JobSubmission& job, const QueueRecord& queue) {
  PlannedJob out;
  auto parsed = core::ParseMgpuParams(job.parameters);
  if (!parsed.has_value()) {
    out.failure = "parameters: " + parsed.error().message;
    return out;
  }
  auto resolved = core::ResolveMgpuParams(*parsed);
  if (!resolved.has_value()) {
    out.failure = resolved.error().message;
    return out;
  }
  out.warnings = resolved->warnings;
  const core::MgpuShare full_card{};  // core=100: the default on either kind of queue.
  auto fail = [&](std::string message) {
    out.tasks.clear();
    out.failure = std::move(message);
    return out;
  };

  if (job.type == JobType::kCustomJob) {
    auto share = resolved->custom_task.value_or(full_card);
    std::string no =
        WholeCardsOnly(share, Described(*parsed, "emr.serverless.mgpu.core", share), queue);
    if (!no.empty()) return fail(no);
    for (int i = 0; i < job.task_count; ++i) out.tasks.push_back(MakeTask(TaskRole::kTask, share));
  } else {
    // Head: the API's "head" wins over serverless.ray.head.*; none means no GPU.
    std::optional<core::MgpuShare> head = resolved->ray_head;
    std::string head_what =
        head ? Described(*parsed, "serverless.ray.head.mgpu.core", *head) : std::string();
    if (job.head && (job.head->core_percent || job.head->memory_mib)) {
      auto s = core::ValidateShare(job.head->core_percent.value_or(100), job.head->memory_mib,
                                   {"head.core", "head.memory_mib"});
      if (!s.has_value()) return fail(s.error().message);
      head = *s;
      head_what = fmt::format("head.core={}", head->core_percent);
    }
    std::string no = WholeCardsOnly(head, head_what, queue);
    if (!no.empty()) return fail(no);
    out.tasks.push_back(MakeTask(TaskRole::kHead, head));

    auto worker = resolved->ray_worker.value_or(full_card);
    std::vector<GroupRequest> groups = job.worker_groups;
    if (groups.empty()) groups.push_back(GroupRequest{"workers", job.workers, {}, {}});
    for (size_t g = 0; g < groups.size(); ++g) {
      core::MgpuShare share = worker;
      std::string what = Described(*parsed, "serverless.ray.worker.mgpu.core", share);
      if (groups[g].core_percent || groups[g].memory_mib) {
        const std::string core_name = fmt::format("worker_groups[{}].core", g);
        const std::string memory_name = fmt::format("worker_groups[{}].memory_mib", g);
        auto s = core::ValidateShare(groups[g].core_percent.value_or(100), groups[g].memory_mib,
                                     {core_name, memory_name});
        if (!s.has_value()) return fail(s.error().message);
        share = *s;
        what = fmt::format("{}={}", core_name, share.core_percent);
      }
      no = WholeCardsOnly(share, what, queue);
      if (!no.empty()) return fail(no);
      for (int i = 0; i < groups[g].replicas; ++i) {
        TaskRecord t = MakeTask(TaskRole::kWorker, share);
        t.group = groups[g].name;
        t.group_index = i;
        out.tasks.push_back(std::move(t));
      }
    }
    if (job.type == JobType::kRayJob)
      out.tasks.push_back(MakeTask(TaskRole::kDriver, std::nullopt));
    if (job.type == JobType::kRayServe) {
      (void)ValidateServeConfig(job.serve_config, &out.warnings);
      out.tasks.push_back(MakeTask(TaskRole::kServe, std::nullopt));
    }
  }
  if (static_cast<int>(out.tasks.size()) > kMaxTasksPerJob + 2) {
    return fail(fmt::format("the job has {} processes; at most {} per job", out.tasks.size(),
                            kMaxTasksPerJob));
  }
  for (size_t i = 0; i < out.tasks.size(); ++i) out.tasks[i].index = static_cast<int>(i);
  return out;
}

}  // namespace carve::server::queues
