// ServerApp: one `carve server` process, assembled. It owns the real parts and wires them:
// the SQLite store and the credentials file in the data directory, the node registry and the
// node claims, the SageMaker service, the mGPU queues, the runtime router, metrics, the HTTP
// front end with every route, and (unless told otherwise) the embedded agents that run the
// simulated fleet's nodes on this machine, each a real `Agent` talking the real protocol to this
// server over loopback. `carve server` parses flags into ServerConfig and runs one; tests create
// one on port 0 in a temporary directory.
//
// Lifecycle: Create (opens the store; on etcd binds the listener as a standby, which serves
// reads and forwards the rest, and waits until this replica leads; then recovers every part
// from the store) -> Start (binds unless bound already, starts the
// local agents and waits for them to register, then the reconcilers) -> Stop (reconcilers first,
// so that agents that cannot report while the listener closes are never declared lost; then the
// listener; then the local agents, stopping their processes unless keep_workloads).
// Errors: InvalidArgument for a bad configuration (it names the key or flag), Unavailable when
// the listener cannot bind, and the store's and the credentials file's own errors.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/launch/sandbox.h"
#include "agent/launch/sandbox_uids.h"
#include "common/result.h"

namespace carve::app {

// Whether the listener speaks HTTPS (docs/security.md, "TLS"). kAuto: yes unless it listens on
// a loopback address without an operator's certificate.
enum class TlsMode { kAuto, kOn, kOff };
Result<TlsMode> ParseTlsMode(std::string_view text);  // "auto", "on", "off"

// The listener's certificate with TLS on: its pin ("sha256:<hex>", what agents check), files,
// and how this start got it ("operator's", "generated", "reused", "renewed with the same key:
// <why>").
struct ListenerTls {
  std::string pin;
  std::string cert_file;
  std::string key_file;
  std::string how;
};

struct ServerConfig {
  std::string listen_host = "127.0.0.1";
  int listen_port = 8080;  // 0: any free port.
  TlsMode tls = TlsMode::kAuto;
  // The operator's certificate chain and key (PEM), both or neither; neither: a self-signed
  // certificate in <data_dir>/tls/ (app/server_certificate.h), named as tls_sans adds.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::vector<std::string> tls_sans;
  // Plain HTTP on an address other machines reach; refused at start without it.
  bool insecure_plain_http = false;
  // With TLS on: called with the certificate once it is loaded, before anything listens (a
  // standby prints it before it waits to lead).
  std::function<void(const ListenerTls&)> on_tls = nullptr;
  std::string data_dir = "./carve-data";
  // "": the SQLite file in data_dir. "etcd://HOST:PORT,...[/PREFIX]": the replicated store; the
  // server then campaigns to lead before it recovers anything, and only the leader runs
  // (docs/ha.md). The data directory still holds the credentials file, the same on every replica.
  std::string store_url;
  // With etcds://: the CA of the members' certificates and this server's client certificate.
  std::string etcd_ca_file;
  std::string etcd_cert_file;
  std::string etcd_key_file;
  // This replica's URL as the others and `carve cluster status` show it ("": http[s]://LISTEN).
  std::string advertise_url;
  std::chrono::seconds leader_ttl{3};  // How long a silent leader keeps leading.
  // While waiting to lead: false ends the wait (the server shuts down instead).
  std::function<bool()> keep_campaigning = [] { return true; };
  // With etcd: called with the bound URL once the listener serves as a standby (reads from the
  // watch cache, the rest forwarded to the leader), before the wait to lead.
  std::function<void(const std::string& url)> on_standby = nullptr;
  // Called once when this leader lost its lease; nullptr: log and exit with status 75, so that
  // the supervisor starts it again as a standby.
  std::function<void()> on_leadership_lost = nullptr;
  std::string config_path;  // YAML with fleet: and runtimes: sections; "" for the defaults.
  std::string region = "us-east-1";
  bool insecure_no_auth = false;
  // GET /metrics without a credential (`--public-metrics`). Otherwise scrapers present the token
  // in <data-dir>/scrape-token (app/scrape_token.h), and operators may sign.
  bool public_metrics = false;
  bool no_local_agent = false;
  bool keep_workloads = false;
  std::chrono::milliseconds node_timeout{15000};
  std::chrono::milliseconds heartbeat{2000};
  // Front-end limits (http/http_server.h): open connections, the deadline for a request's
  // headers, and the largest request body.
  int max_connections = 16384;
  std::chrono::milliseconds header_timeout{10000};
  size_t max_body_bytes = size_t{16} * 1024 * 1024;
  std::string carve_binary;  // Absolute path of the carve executable ({carve} in runtimes).
  // libcarve-mgpu.so for the embedded agents' mGPU shares; "": interposer-enforced shares fail
  // to start, naming why (`carve server` finds it beside the binary unless --interposer).
  std::string interposer_path;
  // The embedded agents' tenant sandbox (docs/security.md, "Sandbox"): --sandbox and the uid
  // range. The server's data dir is hidden from every sandboxed process.
  launch::SandboxMode sandbox = launch::SandboxMode::kAuto;
  uint32_t sandbox_uid_base = launch::kDefaultSandboxUidBase;
  uint32_t sandbox_uid_count = launch::kDefaultSandboxUidCount;
  uint32_t sandbox_container_uid_base = launch::kDefaultContainerUidBase;
  // --sandbox-network auto (launch::PortGuard); off unless the command line asks, so that a
  // test never edits its host's tables.
  bool sandbox_guard_ports = false;
  // Paths sandboxed processes may read although they lie under /tmp (--sandbox-read-only).
  std::vector<std::string> sandbox_read_only;
  // Directories a file:///path or /path ModelDataUrl must resolve inside (docs/security.md,
  // Launch inputs); empty: <data_dir>/models, created at start.
  std::vector<std::string> model_roots;
  // Application Auto Scaling (server/autoscaling): how often it samples the router's signals,
  // and how long a metric must stay above (below) its target before a policy scales out (in).
  std::chrono::milliseconds autoscaling_sample{10'000};
  std::chrono::milliseconds scale_out_evaluation{std::chrono::minutes(3)};
  std::chrono::milliseconds high_resolution_scale_out_evaluation{std::chrono::seconds(30)};
  std::chrono::milliseconds scale_in_evaluation{std::chrono::minutes(15)};
};

class ServerApp {
 public:
  static Result<std::unique_ptr<ServerApp>> Create(ServerConfig config);
  ~ServerApp();  // Stop().

  // Binds and starts everything; returns the bound port.
  Result<int> Start();
  // Idempotent.
  void Stop();

  std::string url() const;         // "http://127.0.0.1:PORT" (https:// with TLS) once started.
  const ListenerTls* tls() const;  // nullptr on plain HTTP.
  std::string credentials_file() const;  // "" with insecure_no_auth.
  bool credentials_created() const;      // The file was written by this start.
  int local_agents() const;

  struct Parts;

 private:
  explicit ServerApp(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace carve::app
