// `carve agent`: the node agent. Registers this machine's GPUs (NVML, or simulated ones) with a
// carve server, carves them as the server decides and runs the workloads placed here as
// processes, until SIGTERM or SIGINT. Workloads keep running when the agent stops.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "agent/launch/device_binding.h"
#include "agent/node/agent.h"
#include "agent/node/control_plane.h"
#include "agent/node/fence.h"
#include "agent/node/node_credential.h"
#include "cli/commands.h"
#include "cli/sandbox_flags.h"
#include "protocol/signed_client.h"

namespace carve::cli {
namespace {
namespace fs = std::filesystem;

struct AgentFlags {
  std::string server;
  std::string join_token;
  std::string server_cert_sha256;
  std::string ca_bundle;
  bool insecure_plain_http = false;
  std::string driver;
  std::string instance_type;
  std::string sim_config;
  std::string node_id;
  std::string data_dir = "./carve-data";
  std::string interposer;
  std::vector<std::string> cdi_spec_dirs;
  std::string log_level = "info";
  int64_t log_max_mib = 16;
  int64_t share_memory_slack_mib = 1024;
  int64_t sim_carve_ms = 0;
  bool no_fence = false;
  std::string sandbox = "auto";
  std::string sandbox_network = "auto";
  uint32_t sandbox_uid_base = launch::kDefaultSandboxUidBase;
  uint32_t sandbox_container_uid_base = launch::kDefaultContainerUidBase;
  uint32_t sandbox_uid_count = launch::kDefaultSandboxUidCount;
  std::vector<std::string> sandbox_read_only;
};

std::string Hostname() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

int RunAgent(const AgentFlags& f) {
  if (auto level = spdlog::level::from_str(f.log_level); level != spdlog::level::off) {
    spdlog::set_level(level);
  }
  std::error_code ec;
  const fs::path carve = fs::read_symlink("/proc/self/exe", ec);
  agent::node::AgentOptions o;
  o.node_id = f.node_id.empty() ? Hostname() : f.node_id;
  o.instance_type = f.instance_type;
  o.driver = f.driver;
  o.sim_config = f.sim_config;
  o.data_dir = f.data_dir;
  o.carve_binary = carve.string();
  o.interposer_path =
      f.interposer.empty() ? launch::FindInterposerLibrary(carve.string()) : f.interposer;
  o.log_max_bytes = static_cast<uint64_t>(f.log_max_mib) << 20;
  o.share_memory_slack_mib = f.share_memory_slack_mib;
  o.sim_carve_time = std::chrono::milliseconds(f.sim_carve_ms);
  o.fence = !f.no_fence;
  o.cdi_spec_dirs = f.cdi_spec_dirs;
  auto sandbox = launch::ParseSandboxMode(f.sandbox);
  if (!sandbox) {
    std::cerr << "carve agent: " << sandbox.error().message << "\n";
    return 2;
  }
  o.sandbox.mode = *sandbox;
  o.sandbox.uid_base = f.sandbox_uid_base;
  o.sandbox.container_uid_base = f.sandbox_container_uid_base;
  o.sandbox.guard_ports = f.sandbox_network == "auto";
  o.sandbox.uid_count = f.sandbox_uid_count;
  o.sandbox.visible = f.sandbox_read_only;
  if (o.interposer_path.empty()) {
    spdlog::warn(
        "libcarve-mgpu.so not found beside carve (--interposer PATH): mGPU shares of "
        "queues with enforcement interposer will fail to start on this node; only "
        "queues with enforcement none run shares here, unenforced");
  }
  // --server URL[,URL...]: the replicas of an HA control plane, tried in turn.
  std::vector<std::string> urls;
  for (size_t at = 0; at <= f.server.size();) {
    const size_t comma = std::min(f.server.find(',', at), f.server.size());
    if (comma > at) urls.push_back(f.server.substr(at, comma - at));
    at = comma + 1;
  }
  if (urls.empty()) {
    std::cerr << "carve agent: --server names no URL\n";
    return 2;
  }
  // Secrets go to another machine over TLS only (docs/security.md, "TLS").
  for (const auto& url : urls) {
    if (Status s = protocol::RefuseSecretInClear(url, "the join token and the node credential",
                                                 "--insecure-plain-http", f.insecure_plain_http);
        !s.ok()) {
      std::cerr << "carve agent: --server " << s.error().message << "\n";
      return 2;
    }
  }
  protocol::ServerTrust trust;
  trust.ca_file = f.ca_bundle;
  if (auto pins = protocol::ParsePins(f.server_cert_sha256); pins) {
    trust.pins = *pins;
  } else {
    std::cerr << "carve agent: --server-cert-sha256: " << pins.error().message << "\n";
    return 2;
  }
  if (!trust.pins.empty() && !trust.ca_file.empty()) {
    std::cerr << "carve agent: --server-cert-sha256 and --ca-bundle are two ways to trust the "
                 "server; give one\n";
    return 2;
  }
  // The node's own credential (docs/security.md, "Nodes"): from the data dir, or by joining once
  // with the operator's bootstrap token.
  const char* env_token = std::getenv("CARVE_JOIN_TOKEN");
  const std::string join_token =
      !f.join_token.empty() ? f.join_token : (env_token != nullptr ? env_token : "");
  auto credential = agent::node::LoadOrJoin((fs::path(f.data_dir) / "node-credential").string(),
                                            urls, join_token, o.node_id, trust);
  if (!credential) {
    std::cerr << "carve agent: " << credential.error().message << "\n";
    return 2;
  }
  // From now on every connection checks the pins the node joined with (or was given since).
  trust.pins = credential->server_pins;
  protocol::ClientCredentials key;
  key.bearer_token = credential->credential;
  std::vector<protocol::SignedClient> servers;
  servers.reserve(urls.size());
  for (const auto& url : urls) servers.emplace_back(url, key, trust);
  agent::node::HttpControlPlane control(std::move(servers));
  auto created = agent::node::Agent::Create(o, control);
  if (!created) {
    std::cerr << "carve agent: " << created.error().message << "\n";
    return 2;
  }
  // Block the stop signals in every thread (the agent's threads inherit the mask) and wait for
  // them here, so nothing runs in a signal handler.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  agent::node::Agent& a = **created;
  a.Start();
  std::cout << "carve agent: node " << o.node_id << " (" << a.registration().instance_type << ", "
            << a.registration().gpus.size() << " GPUs, driver " << a.registration().driver
            << ") serving " << f.server << std::endl;
  int sig = 0;
  sigwait(&stop, &sig);
  spdlog::info("signal {}: stopping the agent; workloads keep running", sig);
  a.Stop();
  return 0;
}

}  // namespace

void RegisterAgentCommands(CLI::App& app, Context& ctx) {
  auto flags = std::make_shared<AgentFlags>();
  CLI::App* cmd = app.add_subcommand(
      "agent",
      "Run the node agent: register this node's GPUs with a carve server, carve them as it "
      "decides and run the workloads it places here as processes. Runs until SIGTERM or "
      "SIGINT; stopping the agent leaves its workloads running, and an agent started again on "
      "the same --data-dir adopts them (those no longer desired are stopped). An agent that "
      "freezes or dies instead has its workloads stopped by its fence watchdog before the "
      "server can place them elsewhere (--no-fence turns that off).");
  cmd->add_option("--server", flags->server,
                  "Server URL, e.g. https://10.0.0.5:8080; several, comma-separated, for the "
                  "replicas of an HA control plane (tried in turn)")
      ->required();
  cmd->add_option("--join-token", flags->join_token,
                  "The bootstrap token of `carve node token create` (or set CARVE_JOIN_TOKEN): "
                  "needed once, when --data-dir holds no node-credential yet");
  cmd->add_option("--server-cert-sha256", flags->server_cert_sha256,
                  "sha256:HEX, the pin of the server certificate's key that `carve node token "
                  "create` prints (comma-separated for replicas with certificates of their "
                  "own): an https server must have it, before the token or any credential is "
                  "sent. Kept in DATA_DIR/node-credential and checked on every connection")
      ->envname("CARVE_SERVER_CERT_SHA256");
  cmd->add_option("--ca-bundle", flags->ca_bundle,
                  "Instead of a pin: PEM CA certificates an https server's certificate must chain "
                  "to, naming the --server host (default: the system's)");
  cmd->add_flag("--insecure-plain-http", flags->insecure_plain_http,
                "Send the join token and the node credential over plain http:// to another "
                "machine (a network you trust); refused by default");
  cmd->add_option("--driver", flags->driver,
                  "nvml (real GPUs) or sim (simulated); default: nvml when libnvidia-ml.so.1 "
                  "loads and sees a GPU, else sim")
      ->check(CLI::IsMember({"nvml", "sim"}));
  cmd->add_option("--instance-type", flags->instance_type,
                  "Instance type, e.g. ml.p4d.24xlarge; default: derived from the GPUs found");
  cmd->add_option("--sim-config", flags->sim_config,
                  "Simulated GPUs, e.g. \"gpus: 8 x a100-40gb\"; default: the instance type's");
  cmd->add_option("--node-id", flags->node_id, "This node's name; default: the hostname");
  cmd->add_option("--data-dir", flags->data_dir, "Pid files, ledgers and workload logs")
      ->capture_default_str();
  cmd->add_option("--interposer", flags->interposer,
                  "Path of libcarve-mgpu.so for mGPU shares; default: found beside carve (or in "
                  "the build tree). Without it, interposer-enforced shares fail to start");
  cmd->add_option("--cdi-spec-dir", flags->cdi_spec_dirs,
                  "A directory of CDI specs that the node's podman or docker reads (repeat for "
                  "more); default: /etc/cdi and /var/run/cdi. A container's GPU is passed as a "
                  "CDI device when a spec there names it");
  cmd->add_option("--sim-carve-ms", flags->sim_carve_ms,
                  "With --driver sim: how long carving one GPU takes (tests of in-flight carves)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--log-max-mib", flags->log_max_mib,
                  "Cap of each workload's stdout and stderr log; past it the newest part moves "
                  "to <log>.1 (0: no cap)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--share-memory-slack-mib", flags->share_memory_slack_mib,
                  "An mGPU share whose processes hold more device memory than its quota plus "
                  "this, as NVML counts it, is stopped as failed (a CUDA context's size; "
                  "carve_mgpu_memory_accounting_mib{kind=\"gap\"} shows it for this node's cards)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--sandbox", flags->sandbox,
                  "auto: run tenant processes as per-account uids in a bubblewrap sandbox when "
                  "this host can, else only one account's; required: refuse launches that cannot "
                  "be sandboxed; off: run them as the agent's user (development). "
                  "docs/security.md")
      ->check(CLI::IsMember({"auto", "required", "off"}))
      ->capture_default_str();
  AddSandboxRangeFlags(cmd, flags->sandbox_uid_base, flags->sandbox_uid_count,
                       flags->sandbox_container_uid_base, flags->sandbox_network);
  cmd->add_option("--sandbox-read-only", flags->sandbox_read_only,
                  "A path sandboxed processes may read although it lies under /tmp (repeatable; "
                  "the directory of carve itself always is)");
  cmd->add_flag("--no-fence", flags->no_fence,
                "Do not start the fence watchdog: the workloads of a frozen or dead agent then "
                "run on beside their replacements until an agent returns");
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  cmd->callback([flags, &ctx] { ctx.exit_code = RunAgent(*flags); });

  // The fence watchdog the agent starts (agent/node/fence.h); not meant to be run by hand.
  auto fence = std::make_shared<agent::node::FenceWatchOptions>();
  CLI::App* watch = app.add_subcommand("agent-fence", "The agent's fence watchdog (internal)");
  watch->group("");
  watch->add_option("--data-dir", fence->data_dir, "The agent's data directory")->required();
  watch->add_option("--agent-pid", fence->agent_pid, "The agent's pid")->required();
  watch->callback([fence, &ctx] { ctx.exit_code = agent::node::RunFenceWatchdog(*fence); });
}

}  // namespace carve::cli
