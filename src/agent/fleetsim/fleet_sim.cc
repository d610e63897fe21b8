#include "agent/fleetsim/fleet_sim.h"

#include <fmt/format.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <optional>

#include "agent/mig/discovery.h"
#include "agent/node/backoff.h"
#include "agent/node/control_plane.h"
#include "agent/node/gpu_applier.h"
#include "agent/node/node_identity.h"
#include "agent/nvml/fake_nvml.h"
#include "common/clock.h"
#include "http/http_client.h"

namespace carve::agent::fleetsim {
namespace asio = boost::asio;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kSimulated = "simulated by carve fleet-sim: no process, serves nothing";

// "http://HOST:PORT" -> "HOST:PORT", HOST numeric (or localhost).
Result<std::string> ParseServer(const std::string& url) {
  std::string_view rest = url;
  if (!rest.starts_with("http://")) {
    return InvalidArgument(fmt::format("server \"{}\" must be http://HOST:PORT", url));
  }
  rest.remove_prefix(7);
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    rest = rest.substr(0, slash);
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) {
    return InvalidArgument(fmt::format("server \"{}\" names no port", url));
  }
  std::string host(rest.substr(0, colon));
  if (host == "localhost") host = "127.0.0.1";
  int port = 0;
  try {
    port = std::stoi(std::string(rest.substr(colon + 1)));
  } catch (const std::exception&) {
    port = 0;
  }
  if (port <= 0 || port > 65535) {
    return InvalidArgument(fmt::format("server \"{}\": the port must be 1..65535", url));
  }
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) {
    return InvalidArgument(
        fmt::format("server \"{}\": \"{}\" is not a numeric address (or localhost)", url, host));
  }
  return address.to_string() + ":" + std::to_string(port);
}

template <typename T>
Result<T> Decode(std::string_view target, Result<protocol::HttpReply> reply,
                 Result<T> (*from_json)(const nlohmann::json&)) {
  if (!reply) return reply.error();
  CARVE_ASSIGN_OR_RETURN(nlohmann::json body, protocol::ParseJsonReply(target, *reply));
  return from_json(body);
}

protocol::ClientCredentials CredentialOf(const FleetSimOptions& options, const std::string& id) {
  protocol::ClientCredentials c;
  if (auto it = options.node_credentials.find(id); it != options.node_credentials.end()) {
    c.bearer_token = it->second;
  }
  return c;
}

}  // namespace

std::vector<std::string> FleetSimNodeIds(const FleetSimOptions& options) {
  const int width = std::max<int>(5, static_cast<int>(std::to_string(options.nodes - 1).size()));
  std::vector<std::string> ids;
  for (int i = 0; i < options.nodes; ++i) {
    ids.push_back(fmt::format("{}-{:0{}}", options.prefix, i, width));
  }
  return ids;
}

struct FleetSim::Counters {
  uint64_t registers = 0;
  uint64_t watches = 0;
  uint64_t heartbeats = 0;
  uint64_t statuses = 0;
  uint64_t errors = 0;
  std::string last_error;

  void Error(const std::string& node, const Error& e) {
    ++errors;
    last_error = node + ": " + e.message;
  }
};

// One simulated agent's channel to the server (its watch, or its reports): requests signed
// as `carve agent` signs them, byte for byte, one at a time, over the fleet's shared HttpClient.
// Close() aborts the request in flight, as a lost machine's dropped connection would; its
// callback then finds the node's generation moved on.
class AgentChannel {
 public:
  using Callback = std::function<void(Result<protocol::HttpReply>)>;
  AgentChannel(http::HttpClient& client, std::string address, const protocol::SignedClient& signer)
      : client_(client), address_(std::move(address)), signer_(signer) {}
  ~AgentChannel() { Close(); }

  void Send(const std::string& method, const std::string& target, std::string body,
            std::chrono::milliseconds timeout, Callback done) {
    http::ClientRequest req;
    req.method = method;
    req.target = target;
    req.headers = signer_.SignedHeaders(method, target, body);
    req.body = std::move(body);
    req.timeout = timeout;
    in_flight_ = client_.Call(
        address_, std::move(req),
        [what = method + " " + target, done = std::move(done)](http::ClientReply reply) {
          if (reply.outcome != http::ClientOutcome::kOk) {
            return done(Unavailable(what + ": " + reply.detail));
          }
          protocol::HttpReply out;
          out.status = reply.status;
          out.body = std::move(reply.body);
          for (auto& [name, value] : reply.headers) {
            out.headers.emplace(std::move(name), std::move(value));
          }
          done(std::move(out));
        });
  }
  void Close() {
    if (in_flight_ != nullptr) in_flight_->Cancel();
    in_flight_.reset();
  }

 private:
  http::HttpClient& client_;
  const std::string address_;
  const protocol::SignedClient& signer_;
  std::shared_ptr<http::HttpClient::Handle> in_flight_;
};

class FleetSim::Node {
 public:
  Node(FleetSim& sim, const std::string& server, std::string id,
       protocol::Registration registration, std::unique_ptr<FakeNvml> nvml,
       std::unique_ptr<node::GpuApplier> gpus)
      : sim_(sim),
        id_(std::move(id)),
        registration_(std::move(registration)),
        nvml_(std::move(nvml)),
        gpus_(std::move(gpus)),
        signer_(sim.options_.server, CredentialOf(sim.options_, id_)),
        watch_(*sim.client_, server, signer_),
        report_(*sim.client_, server, signer_),
        beat_timer_(sim.io_),
        watch_timer_(sim.io_),
        carve_timer_(sim.io_),
        ready_timer_(sim.io_),
        beat_backoff_(milliseconds(500), milliseconds(10000), std::hash<std::string>{}(id_)),
        watch_backoff_(milliseconds(500), milliseconds(10000),
                       std::hash<std::string>{}(id_) ^ 0x5bd1e995u) {}

  bool up() const { return up_; }
  bool registered() const { return registered_; }
  void Count(int64_t& running, int64_t& starting) const {
    for (const auto& [id, w] : workloads_) ++(w.running ? running : starting);
  }

  void Start() {
    if (up_) return;
    up_ = true;
    ++gen_;
    Register();
  }

  // The machine is lost: connections drop mid-request, nothing it ran survives.
  void Stop() {
    if (!up_) return;
    up_ = false;
    Reset();
    workloads_.clear();
    desired_.reset();
  }

 private:
  struct Workload {
    bool running = false;
    bool armed = false;  // its start delay counts (its GPUs are carved)
    SteadyClock::time_point ready_at{};
  };

  // Drops connections and timers; callbacks of the old generation do nothing.
  void Reset() {
    ++gen_;
    registered_ = false;
    beat_in_flight_ = false;
    watch_.Close();
    report_.Close();
    beat_timer_.cancel();
    watch_timer_.cancel();
    carve_timer_.cancel();
    ready_timer_.cancel();
  }

  template <typename Fn>
  void After(asio::steady_timer& timer, milliseconds delay, Fn fn) {
    timer.expires_after(delay);
    timer.async_wait([this, gen = gen_, fn](const boost::system::error_code& ec) {
      if (ec || gen != gen_) return;
      fn();
    });
  }

  void Reregister() {
    Reset();
    Register();
  }

  void Register() {
    const uint64_t gen = gen_;
    report_.Send("POST", "/v1/agent/register", protocol::ToJson(registration_).dump(),
                 sim_.options_.request_timeout, [this, gen](Result<protocol::HttpReply> r) {
                   if (gen != gen_) return;
                   auto reply = Decode<protocol::RegisterReply>("/v1/agent/register",
                                                                std::move(r),
                                                                &protocol::RegisterReplyFromJson);
                   if (!reply) {
                     sim_.counters_->Error(id_, reply.error());
                     After(beat_timer_, beat_backoff_.Next(), [this] { Register(); });
                     return;
                   }
                   ++sim_.counters_->registers;
                   beat_backoff_.Reset();
                   epoch_ = reply->epoch;
                   heartbeat_ = sim_.options_.heartbeat.count() > 0
                                    ? sim_.options_.heartbeat
                                    : milliseconds(std::max<int64_t>(reply->heartbeat_interval_ms,
                                                                     100));
                   registered_ = true;
                   after_ = 0;
                   // Versions start over with a registration: nothing is acted on yet.
                   applied_version_ = 0;
                   desired_.reset();
                   server_wants_status_ = true;  // A new registration knows no status yet.
                   Watch();
                   Beat();
                 });
  }

  void Watch() {
    const uint64_t gen = gen_;
    const std::string target = node::DesiredStatePath(id_, epoch_, after_,
                                                      sim_.options_.watch_wait);
    watch_.Send("GET", target, "", sim_.options_.watch_wait + milliseconds(10000),
                [this, gen, target](Result<protocol::HttpReply> r) {
                  if (gen != gen_) return;
                  auto d = Decode<protocol::DesiredState>(target, std::move(r),
                                                          &protocol::DesiredStateFromJson);
                  if (!d) {
                    sim_.counters_->Error(id_, d.error());
                    if (d.error().code == ErrorCode::kNotFound) return Reregister();
                    After(watch_timer_, watch_backoff_.Next(), [this] { Watch(); });
                    return;
                  }
                  ++sim_.counters_->watches;
                  watch_backoff_.Reset();
                  if (d->epoch != epoch_) return Reregister();  // The server restarted.
                  if (!desired_ || d->version != desired_->version) OnDesired(std::move(*d));
                  after_ = desired_->version;
                  Watch();
                });
  }

  void OnDesired(protocol::DesiredState d) {
    std::map<std::string, Workload> kept;
    for (const protocol::WorkloadDesired& w : d.workloads) {
      auto it = workloads_.find(w.id);
      kept[w.id] = it != workloads_.end() ? it->second : Workload{};
    }
    workloads_ = std::move(kept);
    const bool recarve = !desired_ || desired_->gpus != d.gpus;
    desired_ = std::move(d);
    if (recarve) {
      gpus_pending_ = true;
      if (sim_.options_.carve_delay.count() > 0) {
        After(carve_timer_, sim_.options_.carve_delay, [this] { Carve(); });
      } else {
        Carve();
        return;  // Carve reported the change.
      }
    }
    ArmWorkloads();
    Changed();
  }

  // The agent's own carve, on the simulated GPUs.
  void Carve() {
    std::map<int, std::vector<std::string>> busy;
    for (const protocol::WorkloadDesired& w : desired_->workloads) {
      auto it = workloads_.find(w.id);
      if (it == workloads_.end() || !it->second.armed) continue;
      for (int g : w.device.gpus) busy[g].push_back(w.id);
    }
    for (const std::string& e : gpus_->Apply(desired_->gpus, busy)) {
      sim_.counters_->Error(id_, Internal(e));
    }
    gpus_pending_ = false;
    ArmWorkloads();
    Changed();
  }

  void ArmWorkloads() {
    if (gpus_pending_) return;
    const auto now = SteadyClock::now();
    for (auto& [id, w] : workloads_) {
      if (w.armed) continue;
      w.armed = true;
      w.ready_at = now + sim_.options_.start_delay;
      w.running = sim_.options_.start_delay.count() == 0;
    }
    ArmReadyTimer();
  }

  void ArmReadyTimer() {
    std::optional<SteadyClock::time_point> next;
    for (const auto& [id, w] : workloads_) {
      if (w.armed && !w.running && (!next || w.ready_at < *next)) next = w.ready_at;
    }
    if (!next) return;
    ready_timer_.expires_at(*next);
    ready_timer_.async_wait([this, gen = gen_](const boost::system::error_code& ec) {
      if (ec || gen != gen_) return;
      const auto now = SteadyClock::now();
      bool changed = false;
      for (auto& [id, w] : workloads_) {
        if (w.armed && !w.running && w.ready_at <= now) changed = w.running = true;
      }
      if (changed) Changed();
      ArmReadyTimer();
    });
  }

  void Changed() {
    ++status_version_;
    if (!registered_) return;
    if (beat_in_flight_) {
      beat_again_ = true;
    } else {
      beat_timer_.cancel();
      Beat();
    }
  }

  protocol::StatusReport Report() {
    protocol::StatusReport report;
    report.node_id = id_;
    report.epoch = epoch_;
    report.status_version = status_version_;
    bool all_armed = !gpus_pending_;
    for (const auto& [id, w] : workloads_) all_armed = all_armed && w.armed;
    if (desired_ && gpus_->AllApplied() && all_armed) applied_version_ = desired_->version;
    report.applied_version = applied_version_;
    report.gpus = gpus_->Statuses(false);
    for (const auto& [id, w] : workloads_) {
      protocol::WorkloadStatus s;
      s.id = id;
      s.state = w.running ? protocol::WorkloadState::kRunning : protocol::WorkloadState::kStarting;
      s.message = std::string(kSimulated);
      report.workloads.push_back(std::move(s));
    }
    return report;
  }

  // One heartbeat or full status, by the agent's rule: the full status when it changed since
  // the last one the server took, or the server asked for it.
  void Beat() {
    if (!registered_ || beat_in_flight_) return;
    beat_in_flight_ = true;
    beat_again_ = false;
    const uint64_t gen = gen_;
    const bool full = status_version_ != sent_version_ || server_wants_status_;
    if (full) {
      protocol::StatusReport report = Report();
      const uint64_t version = report.status_version;
      report_.Send("POST", "/v1/agent/status", protocol::ToJson(report).dump(),
                   sim_.options_.request_timeout,
                   [this, gen, version](Result<protocol::HttpReply> r) {
                     if (gen != gen_) return;
                     auto reply = Decode<protocol::StatusReply>("/v1/agent/status", std::move(r),
                                                                &protocol::StatusReplyFromJson);
                     beat_in_flight_ = false;
                     if (!reply) return BeatFailed(reply.error());
                     ++sim_.counters_->statuses;
                     sent_version_ = version;
                     server_wants_status_ = false;
                     if (reply->reregister) return Reregister();
                     NextBeat();
                   });
      return;
    }
    const protocol::Heartbeat beat{id_, epoch_, sent_version_, applied_version_};
    report_.Send("POST", "/v1/agent/heartbeat", protocol::ToJson(beat).dump(),
                 sim_.options_.request_timeout, [this, gen](Result<protocol::HttpReply> r) {
                   if (gen != gen_) return;
                   auto reply = Decode<protocol::HeartbeatReply>(
                       "/v1/agent/heartbeat", std::move(r), &protocol::HeartbeatReplyFromJson);
                   beat_in_flight_ = false;
                   if (!reply) return BeatFailed(reply.error());
                   ++sim_.counters_->heartbeats;
                   if (reply->reregister) return Reregister();
                   if (reply->send_status) {
                     server_wants_status_ = true;
                     beat_again_ = true;
                   }
                   NextBeat();
                 });
  }

  void BeatFailed(const Error& e) {
    sim_.counters_->Error(id_, e);
    if (e.code == ErrorCode::kNotFound) return Reregister();
    After(beat_timer_, beat_backoff_.Next(), [this] { Beat(); });
  }

  void NextBeat() {
    beat_backoff_.Reset();
    if (beat_again_ || status_version_ != sent_version_) return Beat();
    After(beat_timer_, heartbeat_, [this] { Beat(); });
  }

  FleetSim& sim_;
  const std::string id_;
  const protocol::Registration registration_;
  std::unique_ptr<FakeNvml> nvml_;
  std::unique_ptr<node::GpuApplier> gpus_;
  const protocol::SignedClient signer_;  // with this node's own credential
  AgentChannel watch_;
  AgentChannel report_;
  asio::steady_timer beat_timer_;
  asio::steady_timer watch_timer_;
  asio::steady_timer carve_timer_;
  asio::steady_timer ready_timer_;
  node::Backoff beat_backoff_;
  node::Backoff watch_backoff_;

  uint64_t gen_ = 0;
  bool up_ = false;
  bool registered_ = false;
  std::string epoch_;
  uint64_t after_ = 0;
  milliseconds heartbeat_{2000};
  std::optional<protocol::DesiredState> desired_;
  bool gpus_pending_ = false;
  std::map<std::string, Workload> workloads_;
  uint64_t status_version_ = 1;
  uint64_t sent_version_ = 0;
  uint64_t applied_version_ = 0;
  bool server_wants_status_ = true;
  bool beat_in_flight_ = false;
  bool beat_again_ = false;
};

FleetSim::FleetSim(FleetSimOptions options)
    : options_(std::move(options)), counters_(std::make_unique<Counters>()) {}

FleetSim::~FleetSim() {
  nodes_.clear();  // Sockets and timers go while the loop's services still exist.
  tickers_.clear();
}

Result<std::unique_ptr<FleetSim>> FleetSim::Create(FleetSimOptions options) {
  if (options.nodes < 1) {
    return InvalidArgument(fmt::format("nodes {} must be at least 1", options.nodes));
  }
  if (options.prefix.empty()) return InvalidArgument("the node id prefix is empty");
  std::unique_ptr<FleetSim> sim(new FleetSim(std::move(options)));
  CARVE_RETURN_IF_ERROR(sim->Init());
  return sim;
}

Status FleetSim::Init() {
  CARVE_ASSIGN_OR_RETURN(const std::string server, ParseServer(options_.server));
  // Two channels per agent, each keeping its connection between requests as `carve agent`
  // does: the pool holds them all, for as long as the server keeps them open.
  client_ = std::make_unique<http::HttpClient>(
      http::ClientOptions{.max_idle_per_address = static_cast<size_t>(options_.nodes) * 2,
                          .max_idle_age = std::chrono::minutes(10),
                          .io = &io_});
  CARVE_ASSIGN_OR_RETURN(const std::string config, node::SimConfigFor(options_.instance_type));
  const std::vector<std::string> ids = FleetSimNodeIds(options_);
  nodes_.reserve(ids.size());
  for (int i = 0; i < options_.nodes; ++i) {
    const std::string& id = ids[static_cast<size_t>(i)];
    // The seed gives each node its own GPU uuids, as the agent's sim driver does.
    CARVE_ASSIGN_OR_RETURN(std::unique_ptr<FakeNvml> nvml,
                           FakeNvml::FromText(fmt::format("{}, seed: {}", config, i + 1)));
    CARVE_ASSIGN_OR_RETURN(NodeInventory inventory, DiscoverNode(*nvml));
    protocol::Registration registration = node::BuildRegistration(
        {id, options_.instance_type, "sim", "fleet-sim", "/fleet-sim/" + id}, inventory);
    auto gpus = std::make_unique<node::GpuApplier>(*nvml, SystemClock::Get());
    CARVE_RETURN_IF_ERROR(gpus->Init());
    nodes_.push_back(std::make_unique<Node>(*this, server, id, std::move(registration),
                                            std::move(nvml), std::move(gpus)));
  }
  return OkStatus();
}

void FleetSim::Run() {
  auto guard = asio::make_work_guard(io_);
  const size_t n = nodes_.size();
  for (size_t i = 0; i < n; ++i) {
    const auto at = options_.ramp * static_cast<int64_t>(i) / static_cast<int64_t>(n);
    if (at.count() == 0) {
      asio::post(io_, [this, i] { nodes_[i]->Start(); });
      continue;
    }
    auto t = std::make_shared<asio::steady_timer>(io_, at);
    t->async_wait([this, i, t](const boost::system::error_code& ec) {
      if (!ec) nodes_[i]->Start();
    });
  }
  io_.run();
}

void FleetSim::Shutdown() { io_.stop(); }

void FleetSim::StopAgents(int count) {
  asio::post(io_, [this, count] {
    int left = count < 0 ? static_cast<int>(nodes_.size()) : count;
    for (auto& n : nodes_) {
      if (left == 0) break;
      if (n->up()) {
        n->Stop();
        --left;
      }
    }
  });
}

void FleetSim::StartAgents(int count) {
  asio::post(io_, [this, count] {
    int left = count < 0 ? static_cast<int>(nodes_.size()) : count;
    for (auto& n : nodes_) {
      if (left == 0) break;
      if (!n->up()) {
        n->Start();
        --left;
      }
    }
  });
}

FleetSimStats FleetSim::Snapshot() const {
  FleetSimStats s;
  s.nodes = static_cast<int>(nodes_.size());
  for (const auto& n : nodes_) {
    s.up += n->up() ? 1 : 0;
    s.registered += n->registered() ? 1 : 0;
    n->Count(s.workloads_running, s.workloads_starting);
  }
  s.registers = counters_->registers;
  s.watches = counters_->watches;
  s.heartbeats = counters_->heartbeats;
  s.statuses = counters_->statuses;
  s.errors = counters_->errors;
  s.last_error = counters_->last_error;
  return s;
}

void FleetSim::WithStats(std::function<void(const FleetSimStats&)> fn) {
  asio::post(io_, [this, fn = std::move(fn)] { fn(Snapshot()); });
}

struct FleetSim::Ticker {
  Ticker(asio::io_context& io, milliseconds every, std::function<void(const FleetSimStats&)> fn)
      : timer(io), every(every), fn(std::move(fn)) {}
  asio::steady_timer timer;
  milliseconds every;
  std::function<void(const FleetSimStats&)> fn;
};

void FleetSim::Every(milliseconds every, std::function<void(const FleetSimStats&)> fn) {
  asio::post(io_, [this, every, fn = std::move(fn)] {
    tickers_.push_back(std::make_unique<Ticker>(io_, every, fn));
    Tick(tickers_.back().get());
  });
}

void FleetSim::Tick(Ticker* t) {
  t->timer.expires_after(t->every);
  t->timer.async_wait([this, t](const boost::system::error_code& ec) {
    if (ec) return;
    t->fn(Snapshot());
    Tick(t);
  });
}

}  // namespace carve::agent::fleetsim
