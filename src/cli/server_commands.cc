// `carve server`: wires the real implementations together (SQLite store, simulated fleet, the
// SageMaker service, the HTTP front end) and runs until SIGTERM or SIGINT.
#include <spdlog/spdlog.h>

#include <csignal>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "server/credentials.h"
#include "server/fleet/fleet.h"
#include "server/fleet/simulated_node_driver.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/sagemaker/service.h"
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
};

server::HttpServer* g_server = nullptr;  // For the signal handler only.

extern "C" void OnSignal(int) {
  if (g_server != nullptr) g_server->Stop();  // Async-signal-safe by contract.
}

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

  server::Credentials credentials;
  if (!f.insecure_no_auth) {
    const fs::path cred_file = fs::path(f.data_dir) / "credentials";
    auto loaded = server::Credentials::LoadOrCreate(cred_file);
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
  auto config = f.config.empty()
                    ? Result<server::fleet::FleetConfig>(server::fleet::DefaultFleetConfig())
                    : server::fleet::LoadFleetConfig(f.config);
  if (!config.has_value()) {
    spdlog::error("{}", config.error().message);
    return 2;
  }
  auto fleet = server::fleet::Fleet::Create(*config);
  if (!fleet.has_value()) {
    spdlog::error("{}", fleet.error().message);
    return 2;
  }
  server::fleet::SimulatedNodeDriver driver(config->carve_time_per_gpu);
  server::sagemaker::ServiceOptions options;
  options.region = f.region;
  server::sagemaker::SageMakerService service(**store, std::move(fleet).value(), driver, options);
  if (Status st = service.Recover(); !st.ok()) {
    spdlog::error("recovery failed: {}", st.error().message);
    return 2;
  }
  service.Start();

  server::MetricsRegistry metrics;
  RegisterMetrics(metrics, service);
  server::HttpServerOptions http_options;
  http_options.insecure_no_auth = f.insecure_no_auth;
  server::HttpServer http(http_options, credentials, metrics);
  http.SetApiHandler([&](const server::ApiRequest& r) { return service.Handle(r); });
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
  g_server = &http;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::cout << "carve: listening on http://" << host << ":" << *bound << " with "
            << config->nodes.size() << " simulated nodes" << std::endl;
  http.Wait();
  g_server = nullptr;
  spdlog::info("shutting down");
  service.Stop();
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
  cmd->callback([flags, &ctx] { ctx.exit_code = RunServer(*flags); });
}

}  // namespace carve::cli
