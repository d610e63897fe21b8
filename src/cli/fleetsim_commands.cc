// `carve fleet-sim`: N simulated node agents against a carve server over real HTTP, for scale
// tests and benchmarks (agent/fleetsim/fleet_sim.h). Simulated copies are not processes: they
// report running after --start-delay-ms and serve nothing. Faults come on stdin, one per line:
//   stop N | stop all     the first N agents that are up lose their machines
//   start N | start all   N stopped agents boot again
//   stats                 print one progress line now
// Runs until SIGTERM or SIGINT.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "agent/fleetsim/fleet_sim.h"
#include "agent/node/node_credential.h"
#include "cli/commands.h"
#include "common/bounded_json.h"

namespace carve::cli {
namespace {

namespace fs = std::filesystem;

using agent::fleetsim::FleetSim;
using agent::fleetsim::FleetSimStats;

struct FleetSimFlags {
  std::string server;
  std::string join_token;
  std::string node_credentials;
  int nodes = 1;
  std::string instance_type = "ml.p4d.24xlarge";
  std::string prefix = "sim";
  int64_t start_delay_ms = 0;
  int64_t carve_delay_ms = 0;
  int64_t heartbeat_ms = 0;
  int64_t watch_wait_ms = 30000;
  int64_t ramp_ms = 0;
  int64_t stats_ms = 1000;
  std::string log_level = "warn";
};

std::string Line(const FleetSimStats& s, bool json) {
  if (json) {
    return nlohmann::json{{"nodes", s.nodes},
                          {"up", s.up},
                          {"registered", s.registered},
                          {"workloads_running", s.workloads_running},
                          {"workloads_starting", s.workloads_starting},
                          {"registers", s.registers},
                          {"watches", s.watches},
                          {"heartbeats", s.heartbeats},
                          {"statuses", s.statuses},
                          {"errors", s.errors},
                          {"last_error", s.last_error}}
        .dump();
  }
  return fmt::format(
      "fleet-sim: {}/{} agents up, {} registered; simulated workloads {} running, {} starting; "
      "requests: {} register, {} desired, {} heartbeat, {} status, {} errors{}",
      s.up, s.nodes, s.registered, s.workloads_running, s.workloads_starting, s.registers,
      s.watches, s.heartbeats, s.statuses, s.errors,
      s.last_error.empty() ? "" : " (last: " + s.last_error + ")");
}

// Each agent holds two connections; ask for the hard limit of descriptors.
void RaiseDescriptorLimit(int nodes) {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_NOFILE, &r);
  const auto need = static_cast<rlim_t>(2 * nodes + 64);
  if (r.rlim_cur < need) {
    spdlog::warn("descriptor limit {} is below the {} that {} agents need (ulimit -n)",
                 r.rlim_cur, need, nodes);
  }
}

// Every simulated node's own credential, as each real agent holds one: those in
// --node-credentials (a JSON object node id -> credential, mode 0600), and for the rest a join
// with --join-token, in parallel, written back to the file when one is named. A server run with
// --insecure-no-auth needs neither.
Result<std::map<std::string, std::string>> NodeCredentials(
    const FleetSimFlags& f, const agent::fleetsim::FleetSimOptions& o) {
  std::map<std::string, std::string> known;
  if (!f.node_credentials.empty() && fs::exists(f.node_credentials)) {
    std::ifstream in(f.node_credentials);
    std::ostringstream text;
    text << in.rdbuf();
    Result<nlohmann::json> j = ParseJson(text.str());
    if (!j.has_value() || !j->is_object()) {
      return InvalidArgument("--node-credentials " + f.node_credentials +
                             ": not a JSON object of node id to credential");
    }
    for (const auto& [node, credential] : j->items()) {
      if (credential.is_string()) known[node] = credential.get<std::string>();
    }
  }
  std::vector<std::string> missing;
  for (const auto& id : agent::fleetsim::FleetSimNodeIds(o)) {
    if (!known.contains(id)) missing.push_back(id);
  }
  if (missing.empty() || f.join_token.empty()) return known;
  std::mutex mu;
  std::optional<Error> failed;
  std::atomic<size_t> next{0};
  std::vector<std::thread> joiners;
  for (int t = 0; t < 8; ++t) {
    joiners.emplace_back([&] {
      for (size_t i; (i = next++) < missing.size();) {
        auto credential = agent::node::JoinNode({f.server}, f.join_token, missing[i]);
        std::lock_guard lock(mu);
        if (!credential) {
          if (!failed) failed = credential.error();
          return;
        }
        known[missing[i]] = *credential;
      }
    });
  }
  for (auto& t : joiners) t.join();
  if (!f.node_credentials.empty()) {
    const int fd = ::open(f.node_credentials.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                          0600);
    const std::string text = nlohmann::json(known).dump() + "\n";
    if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      if (fd >= 0) ::close(fd);
      return Internal("cannot write --node-credentials " + f.node_credentials);
    }
    ::close(fd);
  }
  if (failed) return *failed;
  return known;
}

int RunFleetSim(const FleetSimFlags& f, bool json) {
  if (auto level = spdlog::level::from_str(f.log_level); level != spdlog::level::off) {
    spdlog::set_level(level);
  }
  agent::fleetsim::FleetSimOptions o;
  o.server = f.server;
  o.nodes = f.nodes;
  o.instance_type = f.instance_type;
  o.prefix = f.prefix;
  if (auto joined = NodeCredentials(f, o); !joined) {
    std::cerr << "carve fleet-sim: " << joined.error().message << "\n";
    return 2;
  } else {
    o.node_credentials = std::move(joined).value();
  }
  o.start_delay = std::chrono::milliseconds(f.start_delay_ms);
  o.carve_delay = std::chrono::milliseconds(f.carve_delay_ms);
  o.heartbeat = std::chrono::milliseconds(f.heartbeat_ms);
  o.watch_wait = std::chrono::milliseconds(f.watch_wait_ms);
  o.ramp = std::chrono::milliseconds(f.ramp_ms);
  RaiseDescriptorLimit(f.nodes);
  auto created = FleetSim::Create(o);
  if (!created) {
    std::cerr << "carve fleet-sim: " << created.error().message << "\n";
    return 2;
  }
  FleetSim& sim = **created;
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  std::mutex out_mu;
  auto print = [&out_mu, json](const FleetSimStats& s) {
    std::lock_guard lock(out_mu);
    std::cout << Line(s, json) << std::endl;
  };
  {
    std::lock_guard lock(out_mu);
    std::cout << fmt::format(
                     "carve fleet-sim: {} simulated {} agents against {}; workloads are "
                     "simulated: no process runs and nothing answers requests",
                     f.nodes, f.instance_type, f.server)
              << std::endl;
  }
  if (f.stats_ms > 0) sim.Every(std::chrono::milliseconds(f.stats_ms), print);

  std::thread commands([&sim, &print, &out_mu] {
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream in(line);
      std::string verb;
      std::string count;
      in >> verb >> count;
      int n = -1;
      if (count != "all" && !count.empty()) {
        try {
          n = std::stoi(count);
        } catch (const std::exception&) {
          n = -2;
        }
      }
      if ((verb == "stop" || verb == "start") && (n >= 0 || count == "all")) {
        verb == "stop" ? sim.StopAgents(n) : sim.StartAgents(n);
        sim.WithStats(print);
      } else if (verb == "stats") {
        sim.WithStats(print);
      } else if (!verb.empty()) {
        std::lock_guard lock(out_mu);
        std::cerr << "carve fleet-sim: unknown command \"" << line
                  << "\": use stop N|all, start N|all or stats" << std::endl;
      }
    }
  });
  commands.detach();  // Blocked in a read of stdin until the process ends.
  std::thread waiter([&sim, stop] {
    int sig = 0;
    sigwait(&stop, &sig);
    sim.Shutdown();
  });
  sim.Run();
  waiter.join();
  return 0;
}

}  // namespace

void RegisterFleetSimCommands(CLI::App& app, Context& ctx) {
  auto flags = std::make_shared<FleetSimFlags>();
  CLI::App* cmd = app.add_subcommand(
      "fleet-sim",
      "Run N simulated node agents against a carve server over real HTTP, through the agent's "
      "own protocol code, on one thread. Simulated workloads are not processes: each reports "
      "running after --start-delay-ms and serves nothing. Faults on stdin: \"stop N|all\" (their "
      "machines are lost), \"start N|all\" (they boot again), \"stats\". Runs until SIGTERM or "
      "SIGINT.");
  cmd->add_option("--server", flags->server, "Server URL, e.g. http://127.0.0.1:8080")
      ->required();
  cmd->add_option("--join-token", flags->join_token,
                  "A bootstrap token (`carve node token create`): each simulated node joins with "
                  "it, as a real agent does, unless --node-credentials already holds its "
                  "credential");
  cmd->add_option("--node-credentials", flags->node_credentials,
                  "A JSON file of node id -> node credential, read first and written after the "
                  "joins (mode 0600), so that a run against the same server needs no new joins");
  cmd->add_option("--nodes", flags->nodes, "How many agents")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--instance-type", flags->instance_type, "Each node's instance type")
      ->capture_default_str();
  cmd->add_option("--prefix", flags->prefix, "Node ids are PREFIX-00000, PREFIX-00001, ...")
      ->capture_default_str();
  cmd->add_option("--start-delay-ms", flags->start_delay_ms,
                  "How long a simulated workload takes from starting to running")
      ->check(CLI::Range(int64_t{0}, int64_t{3600000}))
      ->capture_default_str();
  cmd->add_option("--carve-delay-ms", flags->carve_delay_ms,
                  "How long a simulated re-carve of a node's GPUs takes")
      ->check(CLI::Range(int64_t{0}, int64_t{600000}))
      ->capture_default_str();
  cmd->add_option("--heartbeat-ms", flags->heartbeat_ms,
                  "Heartbeat interval; 0: the one the server asks for")
      ->check(CLI::Range(int64_t{0}, int64_t{600000}))
      ->capture_default_str();
  cmd->add_option("--watch-wait-ms", flags->watch_wait_ms, "Long-poll wait")
      ->check(CLI::Range(int64_t{100}, int64_t{300000}))
      ->capture_default_str();
  cmd->add_option("--ramp-ms", flags->ramp_ms,
                  "Spread the agents' first registrations evenly over this long")
      ->check(CLI::Range(int64_t{0}, int64_t{3600000}))
      ->capture_default_str();
  cmd->add_option("--stats-interval-ms", flags->stats_ms,
                  "Print a progress line this often; 0: only on \"stats\"")
      ->check(CLI::Range(int64_t{0}, int64_t{3600000}))
      ->capture_default_str();
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  cmd->callback([flags, &ctx] { ctx.exit_code = RunFleetSim(*flags, ctx.json); });
}

}  // namespace carve::cli
