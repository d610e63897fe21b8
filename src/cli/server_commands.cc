// `carve server`: wires the real implementations together (SQLite store, node registry, the
// SageMaker service, the HTTP front end, and the embedded local agents that run the simulated
// fleet's nodes on this machine) and runs until SIGTERM or SIGINT.
#include <spdlog/spdlog.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "agent/node/agent.h"
#include "agent/node/control_plane.h"
#include "aws/credentials.h"
#include "cli/commands.h"
#include "protocol/signed_client.h"
#include "server/fleet/fleet.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/nodes/agent_node_driver.h"
#include "server/nodes/agent_routes.h"
#include "server/nodes/node_registry.h"
#include "server/queues/queue_routes.h"
#include "server/queues/queue_service.h"
#include "server/runtime/copy_directory.h"
#include "server/runtime/router.h"
#include "server/sagemaker/runtimes.h"
#include "server/sagemaker/service.h"
#include "server/ui/ui_routes.h"
#include "store/sqlite_store.h"

namespace carve::cli {
namespace {

struct ServerFlags {
  std::string listen = "127.0.0.1:8080";
  std::string data_dir = "./carve-data";
  std::string config;
  std::string region = "us-east-1";
  std::string log_level = "info";
  bool insecure_no_auth = false;
  bool no_local_agent = false;
  bool keep_workloads = false;
  int64_t node_timeout_ms = 15000;
  int64_t heartbeat_ms = 2000;
};

// Set by SIGTERM/SIGINT; the main thread polls it (a lock-free atomic store is async-signal-safe).
std::atomic<bool> g_stop_requested{false};

extern "C" void OnSignal(int) { g_stop_requested.store(true); }

void RegisterMetrics(server::MetricsRegistry& registry, server::sagemaker::SageMakerService& svc) {
  auto& total = registry.AddGauge("carve_partitions_total",
                                  "Partitions carved on the fleet, per GPU model and profile",
                                  {"modelName", "GPU_I_PROFILE"});
  auto& used = registry.AddGauge("carve_partitions_used",
                                 "Partitions occupied by inference-component copies",
                                 {"modelName", "GPU_I_PROFILE"});
  auto& copies = registry.AddGauge("carve_inference_component_copies",
                                   "Inference-component copies, desired and current",
                                   {"account", "inference_component", "state"});
  auto& endpoints = registry.AddGauge("carve_endpoints", "Endpoints by status", {"status"});
  registry.AddCollector([&] {
    auto snap = svc.TakeSnapshot();
    total.Clear();
    used.Clear();
    copies.Clear();
    endpoints.Clear();
    for (const auto& [key, v] : snap.partitions) {
      std::string profile = key.second.starts_with("mig-") ? key.second.substr(4) : key.second;
      total.Set({key.first, profile}, v.first);
      used.Set({key.first, profile}, v.second);
    }
    for (const auto& [key, v] : snap.copies) {
      copies.Set({key.first, key.second, "desired"}, v.first);
      copies.Set({key.first, key.second, "current"}, v.second);
    }
    for (const auto& [status, n] : snap.endpoints_by_status) endpoints.Set({status}, n);
  });
}

// The runtime router's view of the SageMaker service: its route table, rebuilt every pass.
class ServiceCopyDirectory final : public server::runtime::CopyDirectory {
 public:
  explicit ServiceCopyDirectory(const server::sagemaker::RouteTable& table) : table_(table) {}
  Result<server::runtime::RouteInfo> Resolve(const std::string& account,
                                             const std::string& endpoint,
                                             const std::string& component) override {
    CARVE_ASSIGN_OR_RETURN(auto r, table_.Resolve(account, endpoint, component));
    server::runtime::RouteInfo out;
    out.variant = r.variant;
    out.component = r.component;
    out.strategy = r.strategy;
    out.timeout = r.timeout;
    for (auto& c : r.copies) out.copies.push_back({std::move(c.id), std::move(c.address)});
    return out;
  }

 private:
  const server::sagemaker::RouteTable& table_;
};

server::NativeResponse JsonResponse(Result<nlohmann::json> r) {
  server::NativeResponse out;
  if (r.has_value()) {
    out.body = r->dump(2) + "\n";
  } else {
    out.http_status = r.error().code == ErrorCode::kNotFound ? 404 : 500;
    out.body = nlohmann::json{{"error", r.error().message}}.dump() + "\n";
  }
  return out;
}

int RunServer(const ServerFlags& f) {
  spdlog::set_level(spdlog::level::from_str(f.log_level));
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(f.data_dir, ec);
  if (ec) {
    spdlog::error("cannot create data dir {}: {}", f.data_dir, ec.message());
    return 2;
  }
  const size_t colon = f.listen.rfind(':');
  if (colon == std::string::npos) {
    spdlog::error("--listen {}: expected HOST:PORT", f.listen);
    return 2;
  }
  const std::string host = f.listen.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(f.listen.substr(colon + 1));
  } catch (const std::exception&) {
    spdlog::error("--listen {}: the port is not a number", f.listen);
    return 2;
  }

  aws::Credentials credentials;
  if (!f.insecure_no_auth) {
    const fs::path cred_file = fs::path(f.data_dir) / "credentials";
    auto loaded = aws::Credentials::LoadOrCreate(cred_file);
    if (!loaded.has_value()) {
      spdlog::error("credentials: {}", loaded.error().message);
      return 2;
    }
    credentials = loaded->credentials;
    std::cout << "carve: credentials " << (loaded->created ? "created in " : "in ")
              << fs::absolute(cred_file).string()
              << " (use AWS_SHARED_CREDENTIALS_FILE=<that file>)" << std::endl;
  }
  auto store = store::SqliteStore::Open((fs::path(f.data_dir) / "carve.db").string());
  if (!store.has_value()) {
    spdlog::error("store: {}", store.error().message);
    return 2;
  }
  std::string config_text;
  if (!f.config.empty()) {
    std::ifstream in(f.config);
    if (!in) {
      spdlog::error("--config {}: cannot read the file", f.config);
      return 2;
    }
    std::ostringstream text;
    text << in.rdbuf();
    config_text = text.str();
  }
  auto config = f.config.empty()
                    ? Result<server::fleet::FleetConfig>(server::fleet::DefaultFleetConfig())
                    : server::fleet::ParseFleetConfig(config_text);
  if (!config.has_value()) {
    spdlog::error("{}", config.error().message);
    return 2;
  }
  // The embedded default fleet is simulated, so the simulator serves every image there.
  auto runtimes = f.config.empty() ? Result<server::sagemaker::RuntimeCatalog>(
                                         server::sagemaker::BuiltinRuntimes(/*simulate_all=*/true))
                                   : server::sagemaker::ParseRuntimeConfig(config_text);
  if (!runtimes.has_value()) {
    spdlog::error("{}", runtimes.error().message);
    return 2;
  }
  if (!runtimes->default_runtime.empty()) {
    spdlog::info("images that name no runtime are served by {} (simulated fleet)",
                 runtimes->default_runtime);
  }
  std::error_code exe_ec;
  const std::string carve_binary = fs::read_symlink("/proc/self/exe", exe_ec).string();

  server::nodes::NodeRegistryOptions registry_options;
  registry_options.node_timeout = std::chrono::milliseconds(f.node_timeout_ms);
  registry_options.heartbeat_interval = std::chrono::milliseconds(f.heartbeat_ms);
  server::nodes::NodeRegistry registry(**store, registry_options);
  if (Status st = registry.Recover(); !st.ok()) {
    spdlog::error("node recovery failed: {}", st.error().message);
    return 2;
  }
  server::nodes::AgentNodeDriver driver(registry);
  server::sagemaker::ServiceOptions options;
  options.region = f.region;
  options.registry = &registry;
  options.runtimes = *runtimes;
  options.carve_binary = carve_binary;
  // Nodes come from the registry: agents (embedded or remote) register them.
  auto empty_fleet = server::fleet::Fleet::Create({});
  server::sagemaker::SageMakerService service(**store, std::move(empty_fleet).value(), driver,
                                              options);
  if (Status st = service.Recover(); !st.ok()) {
    spdlog::error("recovery failed: {}", st.error().message);
    return 2;
  }

  // mGPU queues take whole nodes from the same fleet through the service's FleetLease.
  server::queues::QueueService queues(**store, registry, service);
  if (Status st = queues.Recover(); !st.ok()) {
    spdlog::error("queue recovery failed: {}", st.error().message);
    return 2;
  }

  server::MetricsRegistry metrics;
  RegisterMetrics(metrics, service);
  server::queues::RegisterQueueMetrics(metrics, queues);
  auto& gap = metrics.AddGauge(
      "carve_mgpu_memory_accounting_mib",
      "Per mGPU worker: the quota ledger's memory (kind=ledger), NVML's per-process memory "
      "(kind=nvml) and their difference (kind=gap; > 0 is memory the quota does not see)",
      {"node", "workload", "kind"});
  metrics.AddCollector([&gap, &registry] {
    gap.Clear();
    for (const auto& g : registry.LedgerGaps()) {
      gap.Set({g.node, g.workload, "gap"}, static_cast<double>(g.gap_mib));
      gap.Set({g.node, g.workload, "ledger"}, static_cast<double>(g.ledger_mib));
      gap.Set({g.node, g.workload, "nvml"}, static_cast<double>(g.nvml_mib));
    }
  });
  ServiceCopyDirectory directory(service.routes());
  server::runtime::Router router(directory, metrics);
  server::HttpServerOptions http_options;
  http_options.insecure_no_auth = f.insecure_no_auth;
  server::HttpServer http(http_options, credentials, metrics);
  http.SetApiHandler([&](const server::ApiRequest& r) { return service.Handle(r); });
  server::nodes::RegisterAgentRoutes(http, registry);
  server::runtime::RegisterRuntimeRoutes(http, router);
  server::queues::RegisterQueueRoutes(http, queues);
  // The web dashboard at /ui/ and its read routes (docs/dashboard.md).
  auto dashboard = server::ui::RegisterUiRoutes(
      http, credentials, metrics, [&](const server::ApiRequest& r) { return service.Handle(r); });
  http.AddRoute("GET", "/v1/fleet", server::RouteAuth::kSigV4,
                [&](const server::NativeRequest&) { return JsonResponse(service.FleetJson()); });
  http.AddRoute(
      "GET", "/v1/endpoints/{name}/carve", server::RouteAuth::kSigV4,
      [&](const server::NativeRequest& r) {
        return JsonResponse(service.EndpointCarveJson(r.account_id, r.path_params.at("name")));
      });
  auto bound = http.Start(host, port);
  if (!bound.has_value()) {
    spdlog::error("cannot listen on {}: {}", f.listen, bound.error().message);
    return 2;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);

  // The embedded local agents: one per node of the simulated fleet, each a real agent talking
  // the real protocol to this server over loopback, running its copies as processes here.
  const std::string url = "http://" + (host == "0.0.0.0" ? std::string("127.0.0.1") : host) + ":" +
                          std::to_string(*bound);
  protocol::ClientCredentials agent_key;
  if (!f.insecure_no_auth && !credentials.all().empty()) {
    agent_key.access_key_id = credentials.all().front().access_key_id;
    agent_key.secret_access_key = credentials.all().front().secret_access_key;
  }
  agent::node::HttpControlPlane control(protocol::SignedClient(url, agent_key));
  std::vector<std::unique_ptr<agent::node::Agent>> agents;
  if (!f.no_local_agent) {
    for (const auto& node : config->nodes) {
      agent::node::AgentOptions ao;
      ao.node_id = node.id.value();
      ao.instance_type = node.instance_type;
      ao.driver = "sim";
      ao.data_dir = (fs::path(f.data_dir) / "nodes" / node.id.value()).string();
      ao.carve_binary = carve_binary;
      ao.sim_carve_time = config->carve_time_per_gpu;
      auto a = agent::node::Agent::Create(ao, control);
      if (!a.has_value()) {
        spdlog::error("local agent for {}: {}", node.id.value(), a.error().message);
        return 2;
      }
      (*a)->Start();
      agents.push_back(std::move(a).value());
    }
    // Let the local nodes register before the reconciler claims any (bounded).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    for (const auto& node : config->nodes) {
      while (std::chrono::steady_clock::now() < deadline) {
        auto view = registry.Node(node.id);
        if (view && view->connected) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  service.Start();
  queues.Start();
  std::cout << "carve: listening on " << url << " with "
            << (f.no_local_agent
                    ? std::string("no local agent (nodes come from carve agent)")
                    : std::to_string(agents.size()) + " simulated nodes run by the local agent")
            << std::endl;
  while (!g_stop_requested.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // The reconciler stops first: once the listener closes, agents cannot report, and a reconciler
  // still running would declare their nodes NotReady and reschedule every copy on the way out.
  spdlog::info("shutting down");
  queues.Stop();
  service.Stop();
  http.Stop();
  http.Wait();
  for (auto& a : agents) {
    if (f.keep_workloads) {
      a->Stop();
    } else {
      a->StopWorkloads();
    }
  }
  return 0;
}

}  // namespace

void RegisterServerCommands(CLI::App& app, Context& ctx) {
  auto flags = std::make_shared<ServerFlags>();
  CLI::App* cmd = app.add_subcommand("server", "Run the SageMaker-compatible control plane");
  cmd->add_option("--listen", flags->listen, "HOST:PORT to serve on (port 0: any free port)");
  cmd->add_option("--data-dir", flags->data_dir, "Where the database and credentials live");
  cmd->add_option("--config", flags->config, "YAML file with a fleet: section");
  cmd->add_option("--region", flags->region, "Region written into ARNs");
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error");
  cmd->add_flag("--insecure-no-auth", flags->insecure_no_auth,
                "Skip SigV4 (local experiments only; logs a warning)");
  cmd->add_flag("--no-local-agent", flags->no_local_agent,
                "Run no embedded agent: every node comes from a `carve agent`");
  cmd->add_flag("--keep-workloads", flags->keep_workloads,
                "On shutdown leave the local agent's processes running (the next start adopts "
                "them); by default they are stopped");
  cmd->add_option("--node-timeout-ms", flags->node_timeout_ms,
                  "A node without a status report for this long is NotReady and its copies are "
                  "rescheduled")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1000}, int64_t{3'600'000}));
  cmd->add_option("--heartbeat-ms", flags->heartbeat_ms, "How often agents report")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{60'000}));
  cmd->callback([flags, &ctx] { ctx.exit_code = RunServer(*flags); });
}

}  // namespace carve::cli
