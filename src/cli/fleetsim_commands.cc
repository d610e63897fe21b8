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

#include <csignal>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "agent/fleetsim/fleet_sim.h"
#include "cli/commands.h"

namespace carve::cli {
namespace {

using agent::fleetsim::FleetSim;
using agent::fleetsim::FleetSimStats;

struct FleetSimFlags {
  std::string server;
  std::string credentials;
  std::string profile = "default";
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

int RunFleetSim(const FleetSimFlags& f, bool json) {
  if (auto level = spdlog::level::from_str(f.log_level); level != spdlog::level::off) {
    spdlog::set_level(level);
  }
  auto credentials = protocol::LoadClientCredentials(f.credentials, f.profile);
  if (!credentials) {
    std::cerr << "carve fleet-sim: " << credentials.error().message << "\n";
    return 2;
  }
  agent::fleetsim::FleetSimOptions o;
  o.server = f.server;
  o.credentials = *credentials;
  o.nodes = f.nodes;
  o.instance_type = f.instance_type;
  o.prefix = f.prefix;
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
  cmd->add_option("--credentials", flags->credentials,
                  "AWS shared-credentials file with the server's key (the server writes one)")
      ->required();
  cmd->add_option("--profile", flags->profile, "Profile in the credentials file")
      ->capture_default_str();
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
