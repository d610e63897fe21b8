// JSON for queue and job records. Parsing catches nlohmann's exceptions at the call and turns
// them into InvalidArgument (no exception leaves this file).
#include "server/queues/queue_model.h"

#include <fmt/format.h>

#include <array>

#include "server/nodes/allocation_json.h"

namespace carve::server::queues {
namespace {

using nlohmann::json;

template <NamedEnum E>
E EnumOrThrow(const json& j, const char* field) {
  auto r = ParseEnum<E>(j.at(field).get<std::string>(), field);
  if (!r.has_value()) throw std::invalid_argument(r.error().message);
  return *r;
}

TaskRecord TaskFromJsonOrThrow(const json& j) {
  TaskRecord t;
  t.index = j.at("index").get<int>();
  t.role = EnumOrThrow<TaskRole>(j, "role");
  t.group = j.value("group", "");
  t.group_index = j.value("group_index", 0);
  t.state = EnumOrThrow<TaskState>(j, "state");
  if (j.contains("core_percent")) {
    core::MgpuShare s;
    s.core_percent = j.at("core_percent").get<int>();
    if (j.contains("memory_mib") && !j.at("memory_mib").is_null()) {
      s.memory_mib = j.at("memory_mib").get<int64_t>();
    }
    t.share = s;
  }
  t.attempt = j.value("attempt", 0);
  t.workload_id = j.value("workload_id", "");
  if (j.contains("allocation")) {
    auto a = nodes::AllocationFromJson(j.at("allocation"));
    if (!a.has_value()) throw std::invalid_argument(a.error().message);
    t.allocation = std::move(a).value();
  }
  if (j.contains("enforcement")) {
    t.enforcement = EnumOrThrow<Enforcement>(j, "enforcement");
  }
  t.node = j.value("node", "");
  t.gpus = j.value("gpus", std::vector<int>{});
  t.agent_state = j.value("agent_state", "");
  t.exit_codes = j.value("exit_codes", std::vector<int>{});
  t.restarts = j.value("restarts", 0);
  t.message = j.value("message", "");
  t.log_dir = j.value("log_dir", "");
  t.rescheduled = j.value("rescheduled", "");
  t.address = j.value("address", "");
  t.ports = j.value("ports", std::map<std::string, int>{});
  return t;
}

}  // namespace

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}
bool IsTerminal(TaskState s) {
  return s == TaskState::kSucceeded || s == TaskState::kFailed || s == TaskState::kCancelled ||
         s == TaskState::kStopped;
}

json ToJson(const QueueRecord& q) {
  json allocation = json::object();
  if (!q.instance_type.empty()) {
    allocation["instance_type"] = q.instance_type;
    allocation["count"] = q.count;
  } else {
    allocation["nodes"] = q.requested_nodes;
  }
  return json{{"account", q.account},
              {"name", q.name},
              {"mgpu", q.mgpu},
              {"strategy", core::StrategyName(q.strategy)},
              {"enforcement", NameOf(q.enforcement)},
              {"gang", q.gang},
              {"allocation", allocation},
              {"nodes", q.nodes},
              {"next_job_seq", q.next_job_seq},
              {"created_ms", q.created_ms}};
}

json ToJson(const TaskRecord& t) {
  json j{{"index", t.index},
         {"role", NameOf(t.role)},
         {"state", NameOf(t.state)},
         {"attempt", t.attempt},
         {"workload_id", t.workload_id},
         {"node", t.node},
         {"agent_state", t.agent_state},
         {"exit_codes", t.exit_codes},
         {"restarts", t.restarts},
         {"message", t.message},
         {"log_dir", t.log_dir},
         {"rescheduled", t.rescheduled}};
  if (!t.group.empty()) {
    j["group"] = t.group;
    j["group_index"] = t.group_index;
  }
  if (t.share) {
    j["core_percent"] = t.share->core_percent;
    j["memory_mib"] = t.share->memory_mib ? json(*t.share->memory_mib) : json(nullptr);
  }
  if (t.allocation) {
    j["allocation"] = nodes::AllocationToJson(*t.allocation, /*with_id=*/true);
  }
  if (t.enforcement) j["enforcement"] = NameOf(*t.enforcement);
  j["gpus"] = t.gpus;
  if (!t.address.empty()) j["address"] = t.address;
  if (!t.ports.empty()) j["ports"] = t.ports;
  return j;
}

json ToJson(const ServeStatus& s) {
  json apps = json::array();
  for (const auto& a : s.applications) {
    apps.push_back({{"name", a.name},
                    {"status", a.status},
                    {"route_prefix", a.route_prefix},
                    {"message", a.message}});
  }
  return json{
      {"status", s.status}, {"message", s.message}, {"ingress", s.ingress}, {"applications", apps}};
}

json ToJson(const JobRecord& j) {
  json tasks = json::array();
  for (const auto& t : j.tasks) tasks.push_back(ToJson(t));
  json out{{"account", j.account},
           {"queue", j.queue},
           {"id", j.id},
           {"name", j.name},
           {"type", NameOf(j.type)},
           {"state", NameOf(j.state)},
           {"reason", j.reason},
           {"priority", j.priority},
           {"gang", j.gang},
           {"seq", j.seq},
           {"max_retries", j.max_retries},
           {"command", j.command},
           {"entrypoint", j.entrypoint},
           {"parameters", j.parameters},
           {"environment", j.environment},
           {"warnings", j.warnings},
           {"head_address", j.head_address},
           {"submitted_ms", j.submitted_ms},
           {"started_ms", j.started_ms},
           {"finished_ms", j.finished_ms},
           {"tasks", tasks}};
  if (!j.dashboard_url.empty()) out["dashboard_url"] = j.dashboard_url;
  if (j.type == JobType::kRayServe) {
    out["serve_config"] = j.serve_config;
    out["serve"] = ToJson(j.serve);
  }
  return out;
}

Result<QueueRecord> QueueFromJson(const json& j) {
  try {
    QueueRecord q;
    q.account = j.at("account").get<std::string>();
    q.name = j.at("name").get<std::string>();
    q.mgpu = j.at("mgpu").get<bool>();
    auto strategy = core::ParseStrategy(j.at("strategy").get<std::string>());
    if (!strategy.has_value()) return strategy.error();
    q.strategy = *strategy;
    q.enforcement = EnumOrThrow<Enforcement>(j, "enforcement");
    q.gang = j.value("gang", false);
    const json& a = j.at("allocation");
    q.instance_type = a.value("instance_type", "");
    q.count = a.value("count", 0);
    q.requested_nodes = a.value("nodes", std::vector<std::string>{});
    q.nodes = j.at("nodes").get<std::vector<std::string>>();
    q.next_job_seq = j.value("next_job_seq", int64_t{1});
    q.created_ms = j.value("created_ms", int64_t{0});
    return q;
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("stored queue record: ") + e.what());
  }
}

Result<JobRecord> JobFromJson(const json& j) {
  try {
    JobRecord r;
    r.account = j.at("account").get<std::string>();
    r.queue = j.at("queue").get<std::string>();
    r.id = j.at("id").get<std::string>();
    r.name = j.value("name", "");
    r.type = EnumOrThrow<JobType>(j, "type");
    r.state = EnumOrThrow<JobState>(j, "state");
    r.reason = j.value("reason", "");
    r.priority = j.value("priority", 0);
    r.gang = j.value("gang", false);
    r.seq = j.value("seq", int64_t{0});
    r.max_retries = j.value("max_retries", 0);
    r.command = j.value("command", std::vector<std::string>{});
    r.entrypoint = j.value("entrypoint", "");
    r.parameters = j.value("parameters", "");
    r.environment = j.value("environment", std::map<std::string, std::string>{});
    r.warnings = j.value("warnings", std::vector<std::string>{});
    r.head_address = j.value("head_address", "");
    r.dashboard_url = j.value("dashboard_url", "");
    r.serve_config = j.value("serve_config", "");
    if (j.contains("serve")) {
      const json& s = j.at("serve");
      r.serve.status = s.value("status", "");
      r.serve.message = s.value("message", "");
      r.serve.ingress = s.value("ingress", "");
      for (const auto& a : s.value("applications", json::array())) {
        r.serve.applications.push_back({a.value("name", ""), a.value("status", ""),
                                        a.value("route_prefix", ""), a.value("message", "")});
      }
    }
    r.submitted_ms = j.value("submitted_ms", int64_t{0});
    r.started_ms = j.value("started_ms", int64_t{0});
    r.finished_ms = j.value("finished_ms", int64_t{0});
    for (const auto& t : j.at("tasks")) r.tasks.push_back(TaskFromJsonOrThrow(t));
    return r;
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("stored job record: ") + e.what());
  }
}

}  // namespace carve::server::queues
