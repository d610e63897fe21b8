// FleetSim: N simulated node agents in one process, against a carve server over real HTTP, the
// way N remote machines running `carve agent --driver sim` would reach it.
//
// Each simulated agent speaks the agent protocol with the agent's own code: its Registration
// comes from the simulated driver through node_identity (the FakeNvml of its instance type), its
// GPUs are carved by the agent's GpuApplier on that FakeNvml, its requests are signed by
// SignedClient and decoded by ParseJsonReply, and it keeps the agent's heartbeat rule (a small
// heartbeat, the full status only when it changed or the server asks). What differs is the
// transport: two keep-alive connections per agent (the long-poll, and register/status/heartbeat)
// on one event loop, so 5,000 agents fit on one thread.
//
// Copies and tasks are NOT processes: a simulated workload reports "starting", then "running"
// after `start_delay`, and serves nothing (no address, so the router never sends it traffic).
//
// Thread-safety: Run() drives everything on the calling thread; every other public method may be
// called from any thread and takes effect on the loop.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <map>
#include <vector>

#include "common/result.h"
#include "protocol/signed_client.h"

namespace carve::http {
class HttpClient;
}  // namespace carve::http

namespace carve::agent::fleetsim {

struct FleetSimOptions {
  std::string server;  // "http://127.0.0.1:8080"
  // Each node's credential by node id (FleetSimNodeIds), as a real agent holds its own
  // (docs/security.md, "Nodes"); a node without one sends unsigned requests (--insecure-no-auth).
  std::map<std::string, std::string> node_credentials;
  int nodes = 1;
  std::string instance_type = "ml.p4d.24xlarge";
  std::string prefix = "sim";  // node ids: prefix-00000 ...
  std::chrono::milliseconds start_delay{0};   // starting -> running, per workload
  std::chrono::milliseconds carve_delay{0};   // per re-carve of a node's GPUs
  std::chrono::milliseconds heartbeat{0};     // 0: the interval the server asks for
  std::chrono::milliseconds watch_wait{30000};
  std::chrono::milliseconds request_timeout{10000};
  // Registrations are spread evenly over this window, as a fleet's machines would boot.
  std::chrono::milliseconds ramp{0};
};

// The node ids of `options`: prefix-00000, prefix-00001, ... (at least 5 digits).
std::vector<std::string> FleetSimNodeIds(const FleetSimOptions& options);

struct FleetSimStats {
  int nodes = 0;
  int up = 0;          // agents running (not stopped by a fault)
  int registered = 0;  // up and registered with the server's current epoch
  int64_t workloads_running = 0;
  int64_t workloads_starting = 0;
  uint64_t registers = 0;
  uint64_t watches = 0;     // long-poll answers
  uint64_t heartbeats = 0;
  uint64_t statuses = 0;    // full status reports
  uint64_t errors = 0;
  std::string last_error;
};

class FleetSim {
 public:
  static Result<std::unique_ptr<FleetSim>> Create(FleetSimOptions options);
  ~FleetSim();

  // Starts every agent and runs the loop until Shutdown().
  void Run();
  void Shutdown();

  // Faults: stop the first `count` agents that are up, as if their machines were lost (their
  // connections drop, their workloads are gone); start `count` stopped ones again (a fresh boot:
  // they register, carve and start what the server asks). Negative count: all.
  void StopAgents(int count);
  void StartAgents(int count);

  // Runs `fn` with a snapshot, on the loop.
  void WithStats(std::function<void(const FleetSimStats&)> fn);
  // Runs `fn` on the loop every `every` (the CLI's progress lines).
  void Every(std::chrono::milliseconds every, std::function<void(const FleetSimStats&)> fn);

 private:
  class Node;
  struct Ticker;
  explicit FleetSim(FleetSimOptions options);
  Status Init();
  FleetSimStats Snapshot() const;
  void Tick(Ticker* ticker);

  FleetSimOptions options_;
  boost::asio::io_context io_;
  struct Counters;
  std::unique_ptr<Counters> counters_;
  std::unique_ptr<http::HttpClient> client_;  // On io_; goes before it.
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Ticker>> tickers_;
};

}  // namespace carve::agent::fleetsim
