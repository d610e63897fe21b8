// `carve queue create|describe|list|update|delete|gpu` and `carve job submit|describe|list|cancel|
// logs`: a client of the server's /v1/queues API (server/queues/queue_routes.h), SigV4-signed with
// the credentials file `carve server` writes. Tables by default, the server's JSON with --json.
// Exit codes: 0 done, 1 the server said no (or the job was accepted as Failed), 2 bad input.
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/server_client.h"
#include "protocol/signed_client.h"

namespace carve::cli {
namespace {

using nlohmann::json;

std::string Counts(const json& jobs) {
  if (!jobs.is_object() || jobs.empty()) return "-";
  std::vector<std::string> parts;
  for (const auto& [state, n] : jobs.items())
    parts.push_back(fmt::format("{} {}", n.get<int>(), state));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void PrintQueue(const json& q) {
  PrintTable(
      {{"Name:", Str(q["name"])},
       {"mGPU:", q.value("mgpu", false) ? "enabled (fixed at creation)" : "disabled (whole cards)"},
       {"Strategy:", Str(q["strategy"])},
       {"Enforcement:", Str(q["enforcement"])},
       {"Gang by default:", q.value("gang", false) ? "yes" : "no"},
       {"Allocation:", Str(q["allocation"])},
       {"Nodes:", fmt::format("{}", fmt::join(q["nodes"].get<std::vector<std::string>>(), ", "))},
       {"Jobs:", Counts(q.value("jobs", json()))}});
}

void PrintGpu(const json& v) {
  const json& t = v["totals"];
  std::cout << fmt::format(
      "Queue {} (mGPU {}, enforcement {}): core {}% of {}%, memory {} of {} MiB, "
      "{} workers\n\n",
      Str(v["queue"]), v.value("mgpu", false) ? "on" : "off", Str(v["enforcement"]),
      Str(t["core_allocated_percent"]), Str(t["core_capacity_percent"]),
      Str(t["memory_allocated_mib"]), Str(t["memory_capacity_mib"]), Str(t["workers"]));
  std::vector<std::vector<std::string>> cards = {{"NODE", "GPU", "MODEL", "CORE ALLOC",
                                                  "MEM ALLOC MiB", "MEM CAP MiB", "WORKERS",
                                                  "UTIL (measured)", "MEM USED MiB (measured)"}};
  std::vector<std::vector<std::string>> workers = {{"NODE", "GPU", "JOB", "TASK", "ROLE", "STATE",
                                                    "CORE LIMIT", "CORE ACHIEVED", "MEM LIMIT MiB",
                                                    "MEM USED MiB"}};
  for (const auto& c : v["cards"]) {
    cards.push_back({Str(c["node"]), Str(c["gpu"]), Str(c["model"]),
                     Str(c["allocated"]["core_percent"]) + "%", Str(c["allocated"]["memory_mib"]),
                     Str(c["memory_capacity_mib"]), Str(c["allocated"]["workers"]),
                     Str(c["used"]["utilization_percent"]), Str(c["used"]["memory_mib"])});
    for (const auto& w : c["workers"]) {
      workers.push_back({Str(c["node"]), Str(c["gpu"]), Str(w["job"]), Str(w["task"]),
                         Str(w["role"]), Str(w["state"]), Str(w["allocated"]["core_percent"]) + "%",
                         Str(w["used"]["core_percent"]), Str(w["allocated"]["memory_mib"]),
                         Str(w["used"]["memory_mib"])});
    }
  }
  PrintTable(cards);
  if (workers.size() > 1) {
    std::cout << "\n";
    PrintTable(workers);
  }
}

std::string Placed(const json& job) {
  int placed = 0;
  int total = 0;
  for (const auto& t : job["tasks"]) {
    ++total;
    placed += t["state"] != "Pending" ? 1 : 0;
  }
  return fmt::format("{}/{}", placed, total);
}

void PrintJob(const json& j) {
  PrintTable(
      {{"Job:", Str(j["id"]) + (j.value("name", "").empty() ? "" : " (" + Str(j["name"]) + ")")},
       {"Queue:", Str(j["queue"])},
       {"Type:", Str(j["type"])},
       {"State:", Str(j["state"])},
       {"Reason:", j.value("reason", "").empty() ? "-" : Str(j["reason"])},
       {"Priority:", Str(j["priority"])},
       {"Gang:", j.value("gang", false) ? "yes" : "no"},
       {"Max retries:", Str(j["max_retries"])}});
  std::vector<std::vector<std::string>> ray;
  if (!j.value("head_address", "").empty())
    ray.push_back({"Head address:", Str(j["head_address"])});
  if (!j.value("dashboard_url", "").empty()) ray.push_back({"Dashboard:", Str(j["dashboard_url"])});
  if (j.contains("serve")) {
    const json& s = j["serve"];
    ray.push_back(
        {"Serve:", Str(s["status"]) +
                       (s.value("message", "").empty() ? "" : " (" + Str(s["message"]) + ")")});
    ray.push_back({"Ingress:", s.value("ingress", "").empty() ? "-" : Str(s["ingress"])});
    for (const auto& a : s.value("applications", json::array())) {
      ray.push_back({"Application:", fmt::format("{} at {}: {}", Str(a["name"]),
                                                 Str(a["route_prefix"]), Str(a["status"]))});
    }
  }
  if (!ray.empty()) PrintTable(ray);
  for (const auto& w : j.value("warnings", json::array()))
    std::cout << "Warning: " << Str(w) << "\n";
  if (j["tasks"].empty()) return;
  std::vector<std::vector<std::string>> rows = {{"TASK", "ROLE", "STATE", "NODE", "GPUS", "CORE",
                                                 "MEM MiB", "EXIT CODES", "RESTARTS", "MESSAGE"}};
  for (const auto& t : j["tasks"]) {
    rows.push_back(
        {Str(t["index"]), Str(t["role"]), Str(t["state"]),
         t.value("node", "").empty() ? "-" : Str(t["node"]),
         t["gpus"].empty() ? "-"
                           : fmt::format("{}", fmt::join(t["gpus"].get<std::vector<int>>(), ",")),
         t.contains("core_percent") ? Str(t["core_percent"]) + "%" : "no GPU",
         t.contains("memory_mib") ? Str(t["memory_mib"]) : "-",
         t["exit_codes"].empty()
             ? "-"
             : fmt::format("{}", fmt::join(t["exit_codes"].get<std::vector<int>>(), ",")),
         Str(t["restarts"]), t.value("message", "").empty() ? "-" : Str(t["message"])});
  }
  std::cout << "\n";
  PrintTable(rows);
}

struct QueueFlags {
  Conn conn;
  std::string name;
  bool mgpu = false;
  std::string instance_type;
  int count = 1;
  std::vector<std::string> nodes;
  std::string strategy;
  std::string enforcement;
  bool gang = false;
};

void RegisterQueue(CLI::App& app, Context& ctx) {
  CLI::App* queue = app.add_subcommand("queue", "mGPU queues on a carve server");
  queue->require_subcommand(1);
  auto f = std::make_shared<QueueFlags>();

  CLI::App* create = queue->add_subcommand("create", "Create a queue that owns whole nodes");
  create->add_option("name", f->name, "Queue name")->required();
  create->add_flag("--mgpu", f->mgpu, "Share cards between workers (fixed at creation)");
  create->add_option("--instance-type", f->instance_type, "Claim nodes of this type");
  create->add_option("--count", f->count, "How many nodes of --instance-type")
      ->capture_default_str();
  create->add_option("--node", f->nodes, "Claim this node by name (repeatable)");
  create->add_option("--strategy", f->strategy, "SPREAD or BINPACK (default BINPACK)");
  create->add_option("--enforcement", f->enforcement,
                     "interposer (default), mps, or none (shares run unenforced)");
  create->add_flag("--gang", f->gang, "Jobs place all their tasks or none by default");
  AddConnFlags(create, f->conn);
  create->callback([f, &ctx] {
    json body{{"name", f->name}, {"mgpu", f->mgpu}, {"gang", f->gang}};
    if (!f->instance_type.empty()) {
      body["allocation"] = {{"instance_type", f->instance_type}, {"count", f->count}};
    } else {
      body["allocation"] = {{"nodes", f->nodes}};
    }
    if (!f->strategy.empty()) body["strategy"] = f->strategy;
    if (!f->enforcement.empty()) body["enforcement"] = f->enforcement;
    json out;
    ctx.exit_code = Call(f->conn, "carve queue create", "POST", "/v1/queues", &body, out);
    if (ctx.exit_code != 0) return;
    if (ctx.json)
      std::cout << out.dump(2) << "\n";
    else
      PrintQueue(out);
  });

  for (const char* verb : {"describe", "delete", "gpu"}) {
    CLI::App* cmd =
        queue->add_subcommand(verb, std::string(verb) == "describe" ? "Show a queue"
                                    : std::string(verb) == "delete"
                                        ? "Delete a queue (refused while jobs run)"
                                        : "GPU usage per card and worker: allocated and measured");
    cmd->add_option("name", f->name, "Queue name")->required();
    AddConnFlags(cmd, f->conn);
    const std::string v = verb;
    cmd->callback([f, &ctx, v] {
      json out;
      const std::string path = "/v1/queues/" + f->name + (v == "gpu" ? "/gpu" : "");
      ctx.exit_code =
          Call(f->conn, "carve queue " + v, v == "delete" ? "DELETE" : "GET", path, nullptr, out);
      if (ctx.exit_code != 0) return;
      if (ctx.json)
        std::cout << out.dump(2) << "\n";
      else if (v == "describe")
        PrintQueue(out);
      else if (v == "gpu")
        PrintGpu(out);
      else
        std::cout << "deleted queue " << f->name << "\n";
    });
  }

  CLI::App* list = queue->add_subcommand("list", "List queues");
  AddConnFlags(list, f->conn);
  list->callback([f, &ctx] {
    json out;
    ctx.exit_code = Call(f->conn, "carve queue list", "GET", "/v1/queues", nullptr, out);
    if (ctx.exit_code != 0) return;
    if (ctx.json) {
      std::cout << out.dump(2) << "\n";
      return;
    }
    std::vector<std::vector<std::string>> rows = {{"NAME", "MGPU", "STRATEGY", "NODES", "JOBS"}};
    for (const auto& q : out["queues"]) {
      rows.push_back({Str(q["name"]), q.value("mgpu", false) ? "yes" : "no", Str(q["strategy"]),
                      fmt::format("{}", fmt::join(q["nodes"].get<std::vector<std::string>>(), ",")),
                      Counts(q.value("jobs", json()))});
    }
    PrintTable(rows);
  });
}

struct JobFlags {
  Conn conn;
  std::string queue;
  std::string id;
  std::string type = "CustomJob";
  std::string name;
  std::string command;
  int tasks = 1;
  std::string parameters;
  std::string parameters_file;
  int priority = 0;
  bool gang = false;
  bool no_gang = false;
  int max_retries = 0;
  std::string entrypoint;
  int workers = 1;
  std::vector<std::string> groups;  // name:replicas[:core[:memory]]
  std::vector<std::string> env;     // KEY=VALUE
  std::string serve_config;         // RayServe: a file with the Serve config
  int task = -1;
};

Result<json> GroupJson(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
  if (parts.size() < 2 || parts.size() > 4) {
    return InvalidArgument("--worker-group " + text +
                           ": expected NAME:REPLICAS[:CORE[:MEMORY_MIB]]");
  }
  json g{{"name", parts[0]}};
  try {
    g["replicas"] = std::stoi(parts[1]);
    if (parts.size() > 2) g["core"] = std::stoll(parts[2]);
    if (parts.size() > 3) g["memory_mib"] = std::stoll(parts[3]);
  } catch (const std::exception&) {
    return InvalidArgument("--worker-group " + text +
                           ": REPLICAS, CORE and MEMORY_MIB are numbers");
  }
  return g;
}

int Submit(const JobFlags& f, const Context& ctx) {
  json body{{"type", f.type}, {"priority", f.priority}, {"max_retries", f.max_retries}};
  if (!f.name.empty()) body["name"] = f.name;
  if (!f.command.empty()) body["command"] = f.command;
  if (f.type == "CustomJob") body["task_count"] = f.tasks;
  // A flag's file, whole; nullopt (said on stderr) when it cannot be read.
  auto read = [](const char* flag, const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path);
    if (!in) {
      std::cerr << "carve job submit: " << flag << " " << path << ": cannot read\n";
      return std::nullopt;
    }
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  std::string params = f.parameters;
  if (!f.parameters_file.empty()) {
    auto text = read("--parameters-file", f.parameters_file);
    if (!text) return 2;
    params += *text;
  }
  if (!params.empty()) body["parameters"] = params;
  if (!f.serve_config.empty()) {
    auto text = read("--serve-config", f.serve_config);
    if (!text) return 2;
    body["serve_config"] = *text;
  }
  if (f.gang) body["gang"] = true;
  if (f.no_gang) body["gang"] = false;
  if (!f.entrypoint.empty()) body["entrypoint"] = f.entrypoint;
  if (f.type == "RayJob") body["workers"] = f.workers;
  for (const auto& g : f.groups) {
    auto gj = GroupJson(g);
    if (!gj.has_value()) {
      std::cerr << "carve job submit: " << gj.error().message << "\n";
      return 2;
    }
    body["worker_groups"].push_back(*gj);
  }
  for (const auto& kv : f.env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "carve job submit: --env " << kv << ": expected KEY=VALUE\n";
      return 2;
    }
    body["environment"][kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  json out;
  int rc = Call(f.conn, "carve job submit", "POST", "/v1/queues/" + f.queue + "/jobs", &body, out);
  if (rc != 0) return rc;
  if (ctx.json)
    std::cout << out.dump(2) << "\n";
  else
    std::cout << "submitted " << Str(out["id"]) << " to queue " << f.queue << ": "
              << Str(out["state"]) << "\n";
  if (out["state"] == "Failed") {
    std::cerr << "carve job submit: " << Str(out["id"]) << " failed: " << Str(out["reason"])
              << "\n";
    return 1;
  }
  return 0;
}

int Logs(const JobFlags& f, const Context& ctx) {
  json out;
  int rc = Call(f.conn, "carve job logs", "GET",
                "/v1/queues/" + f.queue + "/jobs/" + f.id + "/logs", nullptr, out);
  if (rc != 0) return rc;
  if (ctx.json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const auto& t : out["tasks"]) {
    if (f.task >= 0 && t["task"].get<int>() != f.task) continue;
    std::cout << fmt::format("### task {} ({}, {}) on {}: {}\n", Str(t["task"]), Str(t["role"]),
                             Str(t["state"]), t.value("node", "").empty() ? "-" : Str(t["node"]),
                             t.value("log_dir", "").empty() ? "no logs yet" : Str(t["log_dir"]));
    if (t.contains("stdout")) std::cout << Str(t["stdout"]);
    if (t.contains("stderr") && !Str(t["stderr"]).empty())
      std::cout << "--- stderr\n" << Str(t["stderr"]);
  }
  return 0;
}

void RegisterJob(CLI::App& app, Context& ctx) {
  CLI::App* job = app.add_subcommand("job", "Jobs on an mGPU queue");
  job->require_subcommand(1);
  auto f = std::make_shared<JobFlags>();

  CLI::App* submit =
      job->add_subcommand("submit", "Submit a CustomJob, RayJob, RayCluster or RayServe job");
  submit->add_option("--queue,-q", f->queue, "Queue name")->required();
  submit->add_option("--type", f->type, "CustomJob, RayJob, RayCluster or RayServe")
      ->capture_default_str();
  submit->add_option("--name", f->name, "A label for the job");
  submit->add_option("--command", f->command, "CustomJob: shell command each task runs");
  submit->add_option("--tasks", f->tasks, "CustomJob: task count")->capture_default_str();
  submit->add_option(
      "--parameters", f->parameters,
      "Parameter text, e.g. 'emr.serverless.mgpu.core=30; emr.serverless.mgpu.memory=1000;'");
  submit->add_option("--parameters-file", f->parameters_file,
                     "Read the parameter text from a file");
  submit->add_option("--priority", f->priority, "Higher runs first")->capture_default_str();
  submit->add_flag("--gang", f->gang, "All tasks start together or none");
  submit->add_flag("--no-gang", f->no_gang, "Tasks start as they fit (overrides the queue)");
  submit->add_option("--max-retries", f->max_retries, "Restarts per task after a failure")
      ->capture_default_str();
  submit->add_option("--entrypoint", f->entrypoint, "RayJob: the driver command");
  submit->add_option("--workers", f->workers, "RayJob: worker count")->capture_default_str();
  submit->add_option("--worker-group", f->groups,
                     "RayCluster, RayServe: NAME:REPLICAS[:CORE[:MEMORY_MIB]] (repeatable)");
  submit->add_option("--env", f->env, "KEY=VALUE for every task (repeatable)");
  submit->add_option("--serve-config", f->serve_config,
                     "RayServe: a file with the Serve config (the YAML `serve deploy` takes)");
  AddConnFlags(submit, f->conn);
  submit->callback([f, &ctx] { ctx.exit_code = Submit(*f, ctx); });

  for (const char* verb : {"describe", "cancel", "logs"}) {
    CLI::App* cmd = job->add_subcommand(
        verb, std::string(verb) == "describe" ? "Show a job, its tasks, states and reasons"
              : std::string(verb) == "cancel" ? "Cancel a job that has not finished"
                                              : "Print each task's captured output");
    cmd->add_option("--queue,-q", f->queue, "Queue name")->required();
    cmd->add_option("id", f->id, "Job id (job-0001)")->required();
    if (std::string(verb) == "logs") cmd->add_option("--task", f->task, "Only this task");
    AddConnFlags(cmd, f->conn);
    const std::string v = verb;
    cmd->callback([f, &ctx, v] {
      if (v == "logs") {
        ctx.exit_code = Logs(*f, ctx);
        return;
      }
      json out;
      const std::string path =
          "/v1/queues/" + f->queue + "/jobs/" + f->id + (v == "cancel" ? "/cancel" : "");
      ctx.exit_code =
          Call(f->conn, "carve job " + v, v == "cancel" ? "POST" : "GET", path, nullptr, out);
      if (ctx.exit_code != 0) return;
      if (ctx.json)
        std::cout << out.dump(2) << "\n";
      else
        PrintJob(out);
    });
  }

  CLI::App* list = job->add_subcommand("list", "List a queue's jobs");
  list->add_option("--queue,-q", f->queue, "Queue name")->required();
  AddConnFlags(list, f->conn);
  list->callback([f, &ctx] {
    // Every page, in submission order.
    json out{{"jobs", json::array()}};
    std::string token;
    do {
      json page;
      const std::string path = "/v1/queues/" + f->queue + "/jobs" +
                               (token.empty() ? "" : "?next_token=" + token);
      ctx.exit_code = Call(f->conn, "carve job list", "GET", path, nullptr, page);
      if (ctx.exit_code != 0) return;
      for (auto& j : page["jobs"]) out["jobs"].push_back(std::move(j));
      token = page.value("next_token", "");
    } while (!token.empty());
    if (ctx.json) {
      std::cout << out.dump(2) << "\n";
      return;
    }
    std::vector<std::vector<std::string>> rows = {
        {"ID", "NAME", "TYPE", "STATE", "PLACED", "REASON"}};
    for (const auto& j : out["jobs"]) {
      rows.push_back({Str(j["id"]), j.value("name", "").empty() ? "-" : Str(j["name"]),
                      Str(j["type"]), Str(j["state"]), Placed(j),
                      j.value("reason", "").empty() ? "-" : Str(j["reason"])});
    }
    PrintTable(rows);
  });
}

}  // namespace

void RegisterQueueCommands(CLI::App& app, Context& ctx) {
  RegisterQueue(app, ctx);
  RegisterJob(app, ctx);
}

}  // namespace carve::cli
