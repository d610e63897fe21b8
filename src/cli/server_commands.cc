// `carve server`: parses flags into app::ServerConfig and runs the assembled control plane
// (src/app/server_app.h) until SIGTERM or SIGINT.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "agent/launch/device_binding.h"
#include "app/server_app.h"
#include "cli/commands.h"
#include "cli/sandbox_flags.h"

namespace carve::cli {
namespace {

struct ServerFlags {
  std::string listen = "127.0.0.1:8080";
  app::ServerConfig config;
  std::string log_level = "info";
  int64_t node_timeout_ms = 15000;
  int64_t heartbeat_ms = 2000;
  int64_t header_timeout_ms = 10000;
  int64_t max_body_mib = 16;
  int64_t autoscaling_sample_ms = 10'000;
  int64_t scale_out_evaluation_s = 180;
  int64_t scale_in_evaluation_s = 900;
  int64_t high_resolution_scale_out_evaluation_s = 30;
  int64_t leader_ttl_s = 3;
  std::string sandbox = "auto";
  std::string sandbox_network = "auto";
  std::string tls = "auto";
};

// SIGTERM and SIGINT write one byte here; the main thread blocks reading it (write() is
// async-signal-safe, and no signal mask is changed, so the workloads the local agents start
// inherit a clean one).
int g_stop_pipe[2] = {-1, -1};

std::atomic<bool> g_stopping{false};  // Lock-free, so the handler may set it.

extern "C" void OnStopSignal(int) {
  g_stopping = true;
  const char byte = 's';
  [[maybe_unused]] ssize_t n = write(g_stop_pipe[1], &byte, 1);
}

Result<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos)
    return InvalidArgument("--listen " + listen + ": expected HOST:PORT");
  try {
    size_t used = 0;
    const int port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1 || port < 0 || port > 65535) throw std::out_of_range("");
    return std::make_pair(listen.substr(0, colon), port);
  } catch (const std::exception&) {
    return InvalidArgument("--listen " + listen + ": the port must be a number in 0..65535");
  }
}

int RunServer(ServerFlags f) {
  spdlog::set_level(spdlog::level::from_str(f.log_level));
  auto listen = ParseListen(f.listen);
  if (!listen.has_value()) {
    spdlog::error("{}", listen.error().message);
    return 2;
  }
  f.config.listen_host = listen->first;
  f.config.listen_port = listen->second;
  f.config.node_timeout = std::chrono::milliseconds(f.node_timeout_ms);
  f.config.heartbeat = std::chrono::milliseconds(f.heartbeat_ms);
  f.config.header_timeout = std::chrono::milliseconds(f.header_timeout_ms);
  f.config.max_body_bytes = static_cast<size_t>(f.max_body_mib) * 1024 * 1024;
  f.config.autoscaling_sample = std::chrono::milliseconds(f.autoscaling_sample_ms);
  f.config.scale_out_evaluation = std::chrono::seconds(f.scale_out_evaluation_s);
  f.config.scale_in_evaluation = std::chrono::seconds(f.scale_in_evaluation_s);
  f.config.high_resolution_scale_out_evaluation =
      std::chrono::seconds(f.high_resolution_scale_out_evaluation_s);
  std::error_code ec;
  f.config.carve_binary = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (f.config.interposer_path.empty()) {
    f.config.interposer_path = launch::FindInterposerLibrary(f.config.carve_binary);
  }
  if (auto tls = app::ParseTlsMode(f.tls); tls) {
    f.config.tls = *tls;
  } else {
    std::cerr << "carve server: " << tls.error().message << "\n";
    return 2;
  }
  f.config.sandbox_guard_ports = f.sandbox_network == "auto";
  if (auto mode = launch::ParseSandboxMode(f.sandbox); mode) {
    f.config.sandbox = *mode;
  } else {
    std::cerr << "carve server: " << mode.error().message << "\n";
    return 2;
  }
  if (f.config.interposer_path.empty() && !f.config.no_local_agent) {
    spdlog::warn(
        "libcarve-mgpu.so not found beside carve (--interposer PATH): mGPU shares of "
        "queues with enforcement interposer will fail to start on the local agents; "
        "only queues with enforcement none run shares, unenforced");
  }
  // The handlers go in first: a standby waits inside Create until it leads, and a signal ends
  // that wait.
  if (pipe(g_stop_pipe) != 0) {
    spdlog::error("cannot create the shutdown pipe: {}", std::strerror(errno));
    return 2;
  }
  std::signal(SIGTERM, OnStopSignal);
  std::signal(SIGINT, OnStopSignal);
  f.config.leader_ttl = std::chrono::seconds(f.leader_ttl_s);
  f.config.keep_campaigning = [] { return !g_stopping.load(); };
  f.config.on_standby = [](const std::string& url) {
    std::cout << "carve: standby on " << url
              << ": serves reads from its watch cache, forwards the rest to the leader"
              << std::endl;
  };
  f.config.on_tls = [](const app::ListenerTls& tls) {
    // The pin is what joining agents check (--server-cert-sha256); the file is what other
    // clients may trust (--ca-bundle) when the certificate is the generated one.
    std::cout << "carve: TLS certificate " << tls.cert_file << " (" << tls.how << "), pin "
              << tls.pin << std::endl;
  };
  auto server = app::ServerApp::Create(f.config);
  if (!server.has_value()) {
    if (g_stopping) return 0;  // Stopped while it waited to lead.
    spdlog::error("{}", server.error().message);
    return 2;
  }
  if (!(*server)->credentials_file().empty()) {
    std::cout << "carve: credentials " << ((*server)->credentials_created() ? "created in " : "in ")
              << (*server)->credentials_file() << " (use AWS_SHARED_CREDENTIALS_FILE=<that file>)"
              << std::endl;
  }
  auto port = (*server)->Start();
  if (!port.has_value()) {
    spdlog::error("cannot listen on {}: {}", f.listen, port.error().message);
    return 2;
  }
  std::cout << "carve: listening on " << (*server)->url() << " with "
            << (f.config.no_local_agent
                    ? std::string("no local agent (nodes come from carve agent)")
                    : std::to_string((*server)->local_agents()) +
                          " simulated nodes run by the local agent")
            << std::endl;
  char byte = 0;
  while (read(g_stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
  spdlog::info("shutting down");
  (*server)->Stop();
  return 0;
}

}  // namespace

void RegisterServerCommands(CLI::App& app, Context& ctx) {
  auto flags = std::make_shared<ServerFlags>();
  CLI::App* cmd = app.add_subcommand("server", "Run the SageMaker-compatible control plane");
  cmd->add_option("--listen", flags->listen,
                  "HOST:PORT to serve on (port 0: any free port); off loopback, HTTPS by default");
  cmd->add_option("--data-dir", flags->config.data_dir, "Where the database and credentials live");
  cmd->add_option("--tls", flags->tls,
                  "HTTPS on the listener: on, off, or auto (on unless --listen is a loopback "
                  "address and no --tls-cert is given). docs/security.md")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_option("--tls-cert", flags->config.tls_cert_file,
                  "PEM certificate chain to serve HTTPS with (the server's certificate first); "
                  "default: a self-signed one generated into DATA_DIR/tls/ on the first start");
  cmd->add_option("--tls-key", flags->config.tls_key_file,
                  "PEM private key of --tls-cert (not readable by others)");
  cmd->add_option("--tls-san", flags->config.tls_sans,
                  "Another DNS name or IP address for the generated certificate (repeatable); it "
                  "always names this host, localhost, 127.0.0.1, ::1 and the listen address");
  cmd->add_flag("--insecure-plain-http", flags->config.insecure_plain_http,
                "Serve plain HTTP on an address other machines reach (behind a TLS-terminating "
                "proxy, or on a network you trust): tokens and node credentials cross it in the "
                "clear");
  cmd->add_option("--store", flags->config.store_url,
                  "etcd://HOST:PORT,...[/PREFIX] (etcds:// for TLS): keep state in etcd and run as "
                  "one of several "
                  "replicas, of which one leads (docs/ha.md); default: SQLite in --data-dir");
  cmd->add_option("--etcd-cacert", flags->config.etcd_ca_file,
                  "With --store etcds://: the CA that signed the members' certificates");
  cmd->add_option("--etcd-cert", flags->config.etcd_cert_file,
                  "With --store etcds://: this server's client certificate (PEM)");
  cmd->add_option("--etcd-key", flags->config.etcd_key_file,
                  "With --store etcds://: the client certificate's key (PEM)");
  cmd->add_option(
      "--advertise-url", flags->config.advertise_url,
      "This replica's URL as carve cluster status shows it (default: http[s]://LISTEN); "
      "its host is also a name of the generated certificate");
  cmd->add_option("--leader-ttl-s", flags->leader_ttl_s,
                  "With --store etcd: seconds a leader that stops renewing its lease keeps "
                  "leading")
      ->check(CLI::Range(2, 60));
  cmd->add_option("--config", flags->config.config_path, "YAML file with a fleet: section");
  cmd->add_option("--region", flags->config.region, "Region written into ARNs");
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error");
  cmd->add_option("--interposer", flags->config.interposer_path,
                  "Path of libcarve-mgpu.so for the local agents' mGPU shares; default: found "
                  "beside carve (or in the build tree). Without it, interposer-enforced shares "
                  "fail to start");
  cmd->add_option("--sandbox", flags->sandbox,
                  "auto: the local agents run tenant processes as per-account uids in a "
                  "bubblewrap sandbox when the host can, else only one account's; required: "
                  "refuse launches that cannot be sandboxed; off: run them as this user "
                  "(development). docs/security.md")
      ->check(CLI::IsMember({"auto", "required", "off"}))
      ->capture_default_str();
  cmd->add_option("--sandbox-read-only", flags->config.sandbox_read_only,
                  "A path the embedded agents' sandboxed processes may read although it lies "
                  "under /tmp (repeatable; the directory of carve itself always is)");
  AddSandboxRangeFlags(cmd, flags->config.sandbox_uid_base, flags->config.sandbox_uid_count,
                       flags->config.sandbox_container_uid_base, flags->sandbox_network);
  cmd->add_option("--model-root", flags->config.model_roots,
                  "A directory a file:///path or /path ModelDataUrl may name (itself or below "
                  "it, symlinks resolved); repeat for several. Default: DATA_DIR/models "
                  "(docs/security.md)");
  cmd->add_flag("--insecure-no-auth", flags->config.insecure_no_auth,
                "Skip SigV4 (local experiments only; logs a warning)");
  cmd->add_flag("--public-metrics", flags->config.public_metrics,
                "Serve GET /metrics to anyone; by default a scraper presents the token in "
                "<data-dir>/scrape-token as a bearer token (docs/security.md)");
  cmd->add_flag("--no-local-agent", flags->config.no_local_agent,
                "Run no embedded agent: every node comes from a `carve agent`");
  cmd->add_flag("--keep-workloads", flags->config.keep_workloads,
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
  cmd->add_option("--max-connections", flags->config.max_connections,
                  "Open client connections at most; the next one is answered 503 and closed")
      ->capture_default_str()
      ->check(CLI::Range(16, 1'000'000));
  cmd->add_option("--header-timeout-ms", flags->header_timeout_ms,
                  "A request's headers must arrive within this long of its first byte (or of "
                  "the connection's accept), else the connection is closed")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{600'000}));
  cmd->add_option("--max-body-mib", flags->max_body_mib,
                  "Largest request body; a larger one is answered 413")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  cmd->add_option("--autoscaling-sample-ms", flags->autoscaling_sample_ms,
                  "How often Application Auto Scaling samples the invocation signals")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{600'000}));
  cmd->add_option("--scale-out-evaluation-s", flags->scale_out_evaluation_s,
                  "A standard (1-minute) target-tracking metric above its target this long scales "
                  "out")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{86'400}));
  cmd->add_option("--high-resolution-scale-out-evaluation-s",
                  flags->high_resolution_scale_out_evaluation_s,
                  "The same for a high-resolution (10 s) metric")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{86'400}));
  cmd->add_option("--scale-in-evaluation-s", flags->scale_in_evaluation_s,
                  "A target-tracking metric below 90% of its target this long scales in")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{86'400}));
  cmd->callback([flags, &ctx] { ctx.exit_code = RunServer(*flags); });
}

}  // namespace carve::cli
