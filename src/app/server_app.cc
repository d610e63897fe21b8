#include "app/server_app.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "agent/node/agent.h"
#include "agent/node/control_plane.h"
#include "app/cluster_view.h"
#include "app/data_dir.h"
#include "app/fleet_config.h"
#include "app/replica_forwarder.h"
#include "app/scalable_resources.h"
#include "app/scrape_token.h"
#include "app/server_certificate.h"
#include "app/server_routes.h"
#include "aws/credentials.h"
#include "common/clock.h"
#include "http/http_server.h"
#include "http/metrics.h"
#include "http/tls_context.h"
#include "protocol/server_trust.h"
#include "protocol/signed_client.h"
#include "runtime/bearer_revocations.h"
#include "runtime/invocation_stats.h"
#include "runtime/router.h"
#include "runtime/token_routes.h"
#include "server/autoscaling/autoscaling_service.h"
#include "server/nodes/agent_node_driver.h"
#include "server/nodes/agent_routes.h"
#include "server/nodes/node_claims.h"
#include "server/nodes/node_identity.h"
#include "server/nodes/node_registry.h"
#include "server/queues/queue_routes.h"
#include "server/queues/queue_service.h"
#include "server/sagemaker/runtimes.h"
#include "server/sagemaker/service.h"
#include "server/ui/ui_routes.h"
#include "store/etcd_leadership.h"
#include "store/etcd_store.h"
#include "store/sqlite_store.h"

namespace carve::app {

namespace fs = std::filesystem;

struct ServerApp::Parts {
  ServerConfig config;
  std::unique_ptr<DataDirLock> lock;  // Held first and released last: one server per data dir.
  aws::Credentials credentials;
  std::string credentials_file;
  bool credentials_created = false;
  std::unique_ptr<ScrapeToken> scrape_token;
  // HTTPS: the listener's certificate (null on plain HTTP) and what the server prints of it.
  std::shared_ptr<const http::TlsContext> tls;
  std::optional<ListenerTls> tls_info;
  FleetConfig fleet;
  std::unique_ptr<store::Store> store;
  store::EtcdStore* etcd = nullptr;                   // The store, when it is etcd.
  std::unique_ptr<store::EtcdLeadership> leadership;  // With etcd; released before the store.
  std::unique_ptr<server::nodes::NodeRegistry> registry;
  std::unique_ptr<server::nodes::NodeIdentity> identity;
  server::nodes::NodeClaims claims;
  std::unique_ptr<server::nodes::AgentNodeDriver> driver;
  std::unique_ptr<server::sagemaker::SageMakerService> sagemaker;
  std::unique_ptr<server::queues::QueueService> queues;
  http::MetricsRegistry metrics;
  std::unique_ptr<ServiceCopyDirectory> directory;
  runtime::InvocationStats invocation_stats;
  std::unique_ptr<runtime::Router> router;
  std::unique_ptr<runtime::BearerRevocations> revocations;
  std::unique_ptr<SageMakerScalableResources> scalable;
  std::unique_ptr<server::autoscaling::AutoScalingService> autoscaling;
  std::unique_ptr<ReplicaForwarder> forwarder;  // With etcd: what a standby serves, and sends on.
  std::unique_ptr<http::HttpServer> http;
  std::unique_ptr<server::ui::Dashboard> dashboard;
  // One per embedded agent: each speaks with its own node credential.
  std::vector<std::unique_ptr<agent::node::HttpControlPlane>> controls;
  std::vector<std::unique_ptr<agent::node::Agent>> agents;
  int port = 0;
  bool started = false;
  bool stopped = false;
};

namespace {

Result<std::string> ReadConfig(const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path);
  if (!in) return InvalidArgument("--config " + path + ": cannot read the file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Blocks until every node of `fleet` has registered with this server process, or the deadline.
void AwaitLocalNodes(server::nodes::NodeRegistry& registry, const FleetConfig& fleet,
                     std::chrono::seconds timeout) {
  std::mutex mu;
  std::condition_variable registered;
  const auto subscription = registry.AddListener([&] {
    std::lock_guard lock(mu);  // So a registration between a check and the wait is not missed.
    registered.notify_all();
  });
  auto all_connected = [&] {
    for (const auto& node : fleet.nodes) {
      auto view = registry.Node(node.id);
      if (!view || !view->connected) return false;
    }
    return true;
  };
  std::unique_lock lock(mu);
  if (!registered.wait_for(lock, timeout, all_connected)) {
    spdlog::warn("not every local node registered within {} s; carrying on", timeout.count());
  }
}

// http[s]://HOST:PORT as a client on this machine reaches the listener.
std::string BoundUrl(const ServerApp::Parts& p, int port) {
  std::string host = p.config.listen_host;
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::" || host == "[::]") host = "::1";
  if (host.find(':') != std::string::npos && !host.starts_with('[')) host = "[" + host + "]";
  return (p.tls ? "https://" : "http://") + host + ":" + std::to_string(port);
}

std::string Identity(const ServerApp::Parts& p) {
  const ServerConfig& c = p.config;
  if (!c.advertise_url.empty()) return c.advertise_url;
  std::string id = BoundUrl(p, c.listen_port);
  // Port 0 is not known until Start binds: the pid tells such replicas apart.
  if (c.listen_port == 0) id += "#pid" + std::to_string(getpid());
  return id;
}

std::string Hostname() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

// The operator's key may be readable by a group (Debian's ssl-cert), never by everyone.
Status CheckOperatorKey(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    return InvalidArgument("--tls-key " + file + ": cannot read it: " + std::strerror(errno));
  }
  if ((st.st_mode & S_IROTH) != 0) {
    return InvalidArgument("--tls-key " + file +
                           " can be read by every user of this machine; chmod o-r it");
  }
  return OkStatus();
}

// Decides whether the listener speaks HTTPS and loads its certificate (docs/security.md, "TLS"):
// the operator's, or the one generated into <data-dir>/tls/.
Status SetUpTls(ServerApp::Parts& p) {
  const ServerConfig& c = p.config;
  const bool loopback = protocol::IsLoopbackHost(c.listen_host);
  const bool operators = !c.tls_cert_file.empty() || !c.tls_key_file.empty();
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
    return InvalidArgument("--tls-cert and --tls-key go together: a certificate chain and its key");
  }
  if (c.tls == TlsMode::kOn && c.insecure_plain_http) {
    return InvalidArgument("--tls on and --insecure-plain-http contradict each other");
  }
  const bool on = c.tls == TlsMode::kOn ||
                  (c.tls == TlsMode::kAuto && !c.insecure_plain_http && (!loopback || operators));
  if (!on) {
    if (operators || !c.tls_sans.empty()) {
      return InvalidArgument(
          "--tls-cert, --tls-key and --tls-san need TLS, which --tls off or "
          "--insecure-plain-http turns off");
    }
    if (!loopback && !c.insecure_plain_http) {
      return InvalidArgument(
          "--tls off on " + c.listen_host +
          ": bootstrap tokens, node credentials and the dashboard's keys would cross the network "
          "in the clear. Leave TLS on (the default off loopback), or add --insecure-plain-http "
          "for a network you trust or behind a TLS-terminating proxy");
    }
    if (!loopback) {
      spdlog::warn(
          "--insecure-plain-http: plain HTTP on {}; bootstrap tokens and node credentials cross "
          "the network in the clear",
          c.listen_host);
    }
    return OkStatus();
  }
  ListenerTls info;
  if (operators) {
    if (!c.tls_sans.empty()) {
      return InvalidArgument(
          "--tls-san names the generated certificate; the certificate of --tls-cert lists its "
          "own names");
    }
    CARVE_RETURN_IF_ERROR(CheckOperatorKey(c.tls_key_file));
    info.cert_file = fs::absolute(c.tls_cert_file).string();
    info.key_file = fs::absolute(c.tls_key_file).string();
    info.how = "operator's";
  } else {
    std::vector<std::string> extra = c.tls_sans;
    if (!c.advertise_url.empty()) extra.push_back(protocol::UrlHost(c.advertise_url));
    CARVE_ASSIGN_OR_RETURN(auto names, SubjectAltNames(Hostname(), c.listen_host, extra));
    CARVE_ASSIGN_OR_RETURN(
        ServerCertificate cert,
        EnsureServerCertificate(fs::absolute(fs::path(c.data_dir) / "tls"), names));
    info.cert_file = cert.cert_file;
    info.key_file = cert.key_file;
    switch (cert.origin) {
      case ServerCertificate::Origin::kGenerated:
        info.how = "generated";
        break;
      case ServerCertificate::Origin::kRenewed:
        info.how = "renewed with the same key: " + cert.why_renewed;
        break;
      case ServerCertificate::Origin::kReused:
        info.how = "reused";
        break;
    }
  }
  CARVE_ASSIGN_OR_RETURN(p.tls, http::TlsContext::Load(info.cert_file, info.key_file));
  info.pin = p.tls->pin();
  spdlog::info("TLS: certificate {} ({}), pin {}", info.cert_file, info.how, info.pin);
  p.tls_info = std::move(info);
  if (c.on_tls) c.on_tls(*p.tls_info);
  return OkStatus();
}

// Opens the etcd store, with the watch cache a standby reads from, and this replica's
// leadership (not campaigning yet).
Status OpenEtcd(ServerApp::Parts& p) {
  const ServerConfig& c = p.config;
  auto opened = store::EtcdStore::OpenUrl(
      c.store_url, {.cache_reads = true, .require_fence = true},
      {.ca_file = c.etcd_ca_file, .cert_file = c.etcd_cert_file, .key_file = c.etcd_key_file});
  if (!opened.has_value()) {
    Error e = opened.error();
    e.message = "--store " + c.store_url + ": " + e.message;
    return e;
  }
  p.etcd = opened->get();
  p.store = std::move(opened).value();
  const std::string identity = Identity(p);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const nlohmann::json details = {{"url", identity},
                                  {"host", host},
                                  {"pid", getpid()},
                                  {"started_ms", SystemClock::Get().UnixMillis()}};
  p.leadership = std::make_unique<store::EtcdLeadership>(
      *p.etcd, store::LeadershipOptions{identity, details.dump(), c.leader_ttl});
  return OkStatus();
}

// Every part's state from the store: the node registry first (placement needs the nodes), then
// the SageMaker service, then the queues.
Status RecoverAll(ServerApp::Parts& p) {
  CARVE_RETURN_IF_ERROR(p.registry->Recover());
  CARVE_RETURN_IF_ERROR(p.sagemaker->Recover());
  return p.queues->Recover();
}

// A standby binds the listener at once (reads from the watch cache, the rest forwarded to the
// leader: replica_forwarder.h), then blocks until this replica leads. Only the leader recovers
// state and runs the reconcilers; its store is fenced from then on (store/etcd_leadership.h)
// and reads etcd itself, since its own commits reach the cache only through the watch.
Status ServeAsStandbyThenLead(ServerApp::Parts& p) {
  const ServerConfig& c = p.config;
  const std::string identity = Identity(p);
  CARVE_ASSIGN_OR_RETURN(p.port, p.http->Start(c.listen_host, c.listen_port));
  p.started = true;
  spdlog::info("store: etcd {} (prefix {}); {} serves as a standby and campaigns to lead",
               c.store_url, p.etcd->prefix(), identity);
  if (c.on_standby) c.on_standby(BoundUrl(p, p.port));
  std::function<void()> lost = c.on_leadership_lost;
  if (!lost) {
    lost = [identity] {
      spdlog::critical("{} lost its leadership; exiting so that it restarts as a standby",
                       identity);
      spdlog::shutdown();
      std::_Exit(75);
    };
  }
  CARVE_RETURN_IF_ERROR(p.leadership->Campaign(c.keep_campaigning, std::move(lost)));
  p.forwarder->SetRole(ReplicaRole::kPromoting);  // Requests wait while state is recovered.
  p.etcd->SetCachedReads(false);
  CARVE_RETURN_IF_ERROR(RecoverAll(p));
  p.forwarder->SetRole(ReplicaRole::kLeading);
  spdlog::info("{} leads", identity);
  return OkStatus();
}

}  // namespace

Result<TlsMode> ParseTlsMode(std::string_view text) {
  if (text == "auto") return TlsMode::kAuto;
  if (text == "on") return TlsMode::kOn;
  if (text == "off") return TlsMode::kOff;
  return InvalidArgument("--tls " + std::string(text.substr(0, 16)) + ": auto, on or off");
}

ServerApp::ServerApp(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

ServerApp::~ServerApp() { Stop(); }

Result<std::unique_ptr<ServerApp>> ServerApp::Create(ServerConfig config) {
  auto p = std::make_unique<Parts>();
  p->config = std::move(config);
  const ServerConfig& c = p->config;
  std::error_code ec;
  fs::create_directories(c.data_dir, ec);
  if (ec) {
    return InvalidArgument("--data-dir " + c.data_dir + ": cannot create it: " + ec.message());
  }
  CARVE_ASSIGN_OR_RETURN(p->lock, DataDirLock::Acquire(c.data_dir));
  if (!c.insecure_no_auth) {
    p->credentials_file = fs::absolute(fs::path(c.data_dir) / "credentials").string();
    CARVE_RETURN_IF_ERROR(CheckCredentialsFile(p->credentials_file));
    auto loaded = aws::Credentials::LoadOrCreate(p->credentials_file);
    if (!loaded.has_value()) return loaded.error();
    p->credentials = loaded->credentials;
    p->credentials_created = loaded->created;
    // A key added or removed, or a role changed, takes effect without a restart.
    p->credentials.Watch(p->credentials_file,
                         [file = p->credentials_file](const Status& s, size_t keys) {
                           if (s.ok()) {
                             spdlog::info("{} changed: {} keys now", file, keys);
                           } else {
                             spdlog::error("{} changed but is refused; the last good keys stay: {}",
                                           file, s.error().message);
                           }
                         });
  }
  CARVE_RETURN_IF_ERROR(SetUpTls(*p));  // Before the store: a replica's identity is its URL.
  if (c.store_url.empty()) {
    const std::string db_file = fs::absolute(fs::path(c.data_dir) / "carve.db").string();
    auto opened = store::SqliteStore::Open(db_file);
    if (!opened.has_value()) return BadDatabase(db_file, opened.error());
    p->store = std::move(opened).value();
  } else {
    CARVE_RETURN_IF_ERROR(OpenEtcd(*p));
  }
  CARVE_ASSIGN_OR_RETURN(std::string config_text, ReadConfig(c.config_path));
  if (c.config_path.empty()) {
    p->fleet = DefaultFleetConfig();
  } else {
    CARVE_ASSIGN_OR_RETURN(p->fleet, ParseFleetConfig(config_text));
  }
  // The embedded default fleet is simulated, so the simulator serves every image there.
  server::sagemaker::RuntimeCatalog runtimes;
  if (c.config_path.empty()) {
    runtimes = server::sagemaker::BuiltinRuntimes(/*simulate_all=*/true);
  } else {
    CARVE_ASSIGN_OR_RETURN(runtimes, server::sagemaker::ParseRuntimeConfig(config_text));
  }
  if (!runtimes.default_runtime.empty()) {
    spdlog::info("images that name no runtime are served by {} (simulated fleet)",
                 runtimes.default_runtime);
  }
  server::queues::QueueOptions queue_options;
  CARVE_ASSIGN_OR_RETURN(queue_options.ray, server::queues::ParseRayConfig(config_text));

  server::nodes::NodeRegistryOptions registry_options;
  registry_options.node_timeout = c.node_timeout;
  registry_options.heartbeat_interval = c.heartbeat;
  p->registry = std::make_unique<server::nodes::NodeRegistry>(*p->store, registry_options);
  p->driver = std::make_unique<server::nodes::AgentNodeDriver>(*p->registry);
  p->identity = std::make_unique<server::nodes::NodeIdentity>(*p->store, SystemClock::Get());
  server::sagemaker::ServiceOptions options;
  options.region = c.region;
  options.registry = p->registry.get();
  options.runtimes = std::move(runtimes);
  options.model_roots = c.model_roots;
  if (options.model_roots.empty()) {
    const fs::path models = fs::path(c.data_dir) / "models";
    fs::create_directories(models, ec);
    if (ec)
      return InvalidArgument("cannot create the model root " + models.string() + ": " +
                             ec.message());
    options.model_roots.push_back(models.string());
  }
  for (auto& root : options.model_roots) root = fs::absolute(root).string();
  p->sagemaker = std::make_unique<server::sagemaker::SageMakerService>(*p->store, p->claims,
                                                                       *p->driver, options);
  // mGPU queues take whole nodes from the same claims, so no node serves both.
  p->queues = std::make_unique<server::queues::QueueService>(*p->store, *p->registry, p->claims,
                                                             std::move(queue_options));

  RegisterServerMetrics(p->metrics, *p->sagemaker, *p->registry);
  server::queues::RegisterQueueMetrics(p->metrics, *p->queues);
  p->directory = std::make_unique<ServiceCopyDirectory>(p->sagemaker->routes());
  runtime::RouterOptions router_options;
  router_options.stats = &p->invocation_stats;
  p->router = std::make_unique<runtime::Router>(*p->directory, p->metrics, router_options);
  p->scalable = std::make_unique<SageMakerScalableResources>(*p->sagemaker);
  server::autoscaling::AutoScalingOptions scaling;  // Before the routes: its metrics read it.
  scaling.region = c.region;
  scaling.sample_interval = c.autoscaling_sample;
  scaling.scale_out_evaluation = c.scale_out_evaluation;
  scaling.scale_in_evaluation = c.scale_in_evaluation;
  scaling.high_resolution_scale_out_evaluation = c.high_resolution_scale_out_evaluation;
  scaling.metrics = &p->metrics;  // Customized metrics name carve's own series.
  p->autoscaling = std::make_unique<server::autoscaling::AutoScalingService>(
      *p->store, *p->scalable, p->invocation_stats, scaling);
  RegisterAutoScalingMetrics(p->metrics, *p->autoscaling);
  http::HttpServerOptions http_options;
  http_options.insecure_no_auth = c.insecure_no_auth;
  http_options.max_connections = c.max_connections;
  http_options.header_timeout = c.header_timeout;
  http_options.max_body_bytes = c.max_body_bytes;
  http_options.public_metrics = c.public_metrics;
  http_options.region = c.region;
  p->revocations = std::make_unique<runtime::BearerRevocations>(*p->store, SystemClock::Get());
  http_options.bearer_token_revoked = [revocations = p->revocations.get()](std::string_view id) {
    return revocations->IsRevoked(id);
  };
  http_options.tls = p->tls;
  if (!c.insecure_no_auth && !c.public_metrics) {
    CARVE_ASSIGN_OR_RETURN(p->scrape_token,
                           ScrapeToken::OpenOrCreate(fs::path(c.data_dir) / "scrape-token"));
    http_options.scrape_token_ok = [token = p->scrape_token.get()](std::string_view presented) {
      return token->Matches(presented);
    };
  }
  http_options.node_credential_ok = [identity = p->identity.get()](std::string_view credential) {
    return identity->VerifyNode(credential);
  };
  http_options.bootstrap_token_ok = [identity = p->identity.get()](std::string_view token) {
    return identity->VerifyBootstrapToken(token);
  };
  p->http = std::make_unique<http::HttpServer>(http_options, p->credentials, p->metrics);
  if (p->etcd != nullptr) {
    p->forwarder = std::make_unique<ReplicaForwarder>(
        ReplicaForwarderOptions{
            .self = Identity(*p),
            .leader = [leadership = p->leadership.get()] { return leadership->Leader(); },
            .trust = {.pins = p->tls ? std::vector<std::string>{p->tls->pin()}
                                     : std::vector<std::string>{}}},
        p->metrics);
    p->http->SetForwarder(p->forwarder->Hook());
    RegisterStoreCacheMetrics(p->metrics, *p->etcd);
  }
  p->http->SetApiHandler(
      [svc = p->sagemaker.get()](const http::ApiRequest& r) { return svc->Handle(r); });
  p->http->AddApiHandler(
      "AnyScaleFrontendService.", "application-autoscaling",
      [svc = p->autoscaling.get()](const http::ApiRequest& r) { return svc->Handle(r); });
  server::nodes::RegisterAgentRoutes(*p->http, *p->registry, *p->identity,
                                     p->tls ? p->tls->pin() : "");
  runtime::RegisterRuntimeRoutes(*p->http, *p->router);
  runtime::RegisterTokenRoutes(
      *p->http, *p->revocations,
      {.credentials = &p->credentials, .service = "sagemaker", .region = c.region});
  server::queues::RegisterQueueRoutes(*p->http, *p->queues);
  RegisterViewRoutes(*p->http, *p->sagemaker, *p->queues);
  RegisterClusterRoute(
      *p->http,
      {.self =
           [parts = p.get()] {
             return parts->etcd != nullptr || parts->port == 0 ? Identity(*parts)
                                                               : BoundUrl(*parts, parts->port);
           },
       .sqlite_file = c.store_url.empty() ? fs::absolute(fs::path(c.data_dir) / "carve.db").string()
                                          : std::string(),
       .store_url = c.store_url,
       .etcd = p->etcd,
       .leadership = p->leadership.get()});
  // The web dashboard at /ui/ and its read routes (docs/dashboard.md).
  p->dashboard = server::ui::RegisterUiRoutes(
      *p->http, p->credentials, p->metrics,
      [svc = p->sagemaker.get()](const http::ApiRequest& r) { return svc->Handle(r); });
  RegisterEndpointsView(*p->http, *p->sagemaker, *p->dashboard);
  if (p->etcd == nullptr) {
    CARVE_RETURN_IF_ERROR(RecoverAll(*p));
  } else if (Status led = ServeAsStandbyThenLead(*p); !led.ok()) {
    p->http->Stop();  // Before the parts its routes use go.
    p->http->Wait();
    p->dashboard->Stop();
    return led.error();
  }
  return std::unique_ptr<ServerApp>(new ServerApp(std::move(p)));
}

Result<int> ServerApp::Start() {
  Parts& p = *parts_;
  const ServerConfig& c = p.config;
  if (!p.started) {  // A replica on etcd listens from the moment it starts, as a standby.
    CARVE_ASSIGN_OR_RETURN(p.port, p.http->Start(c.listen_host, c.listen_port));
    p.started = true;
  }
  if (!c.no_local_agent) {
    // The embedded agents share this host, so they share one uid allocation: an account's
    // processes get one uid whichever simulated node runs them, and no two accounts get the same.
    std::shared_ptr<agent::node::SharedSandboxUids> uids;
    if (c.sandbox != launch::SandboxMode::kOff && !p.fleet.nodes.empty()) {
      CARVE_ASSIGN_OR_RETURN(
          uids, agent::node::SharedSandboxUids::Open(
                    (fs::path(c.data_dir) / "sandbox-uids").string(), c.sandbox_uid_base,
                    c.sandbox_uid_count, c.sandbox_container_uid_base));
    }
    for (const auto& node : p.fleet.nodes) {
      // Each embedded agent speaks the agent protocol with a node credential of its own, issued
      // here in process on every start (docs/security.md, "Nodes").
      protocol::ClientCredentials key;
      if (!c.insecure_no_auth) {
        CARVE_ASSIGN_OR_RETURN(key.bearer_token, p.identity->Issue(node.id.value()));
      }
      // Over https they trust exactly this server's certificate, by its pin.
      protocol::ServerTrust trust;
      if (p.tls) trust.pins = {p.tls->pin()};
      p.controls.push_back(std::make_unique<agent::node::HttpControlPlane>(
          protocol::SignedClient(url(), key, std::move(trust))));
      agent::node::AgentOptions ao;
      ao.node_id = node.id.value();
      ao.instance_type = node.instance_type;
      ao.driver = "sim";
      ao.data_dir = (fs::path(c.data_dir) / "nodes" / node.id.value()).string();
      ao.carve_binary = c.carve_binary;
      ao.interposer_path = c.interposer_path;
      ao.sandbox.mode = c.sandbox;
      ao.sandbox.visible = c.sandbox_read_only;
      ao.sandbox.uid_base = c.sandbox_uid_base;
      ao.sandbox.uid_count = c.sandbox_uid_count;
      ao.sandbox.container_uid_base = c.sandbox_container_uid_base;
      ao.sandbox.guard_ports = c.sandbox_guard_ports;
      ao.sandbox.shared_uids = uids;
      ao.sandbox.hidden = {fs::absolute(c.data_dir).string()};
      ao.sim_carve_time = p.fleet.carve_time_per_gpu;
      CARVE_ASSIGN_OR_RETURN(auto a, agent::node::Agent::Create(ao, *p.controls.back()));
      a->Start();
      p.agents.push_back(std::move(a));
    }
    // The reconciler claims nodes only once the local ones registered (bounded).
    AwaitLocalNodes(*p.registry, p.fleet, std::chrono::seconds(15));
  }
  p.sagemaker->Start();
  p.queues->Start();
  p.autoscaling->Start();
  return p.port;
}

void ServerApp::Stop() {
  Parts& p = *parts_;
  if (p.stopped) return;
  p.stopped = true;
  // The reconcilers stop first: once the listener closes, agents cannot report, and a reconciler
  // still running would declare their nodes NotReady and reschedule every copy on the way out.
  p.autoscaling->Stop();
  p.queues->Stop();
  p.sagemaker->Stop();
  if (p.started) {
    p.http->Stop();
    p.http->Wait();
  }
  p.dashboard->Stop();
  for (auto& a : p.agents) {
    if (p.config.keep_workloads) {
      a->Stop();
    } else {
      a->StopWorkloads();
    }
  }
}

std::string ServerApp::url() const { return BoundUrl(*parts_, parts_->port); }

const ListenerTls* ServerApp::tls() const {
  return parts_->tls_info ? &*parts_->tls_info : nullptr;
}

std::string ServerApp::credentials_file() const { return parts_->credentials_file; }
bool ServerApp::credentials_created() const { return parts_->credentials_created; }
int ServerApp::local_agents() const { return static_cast<int>(parts_->agents.size()); }

}  // namespace carve::app
