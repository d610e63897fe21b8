#include "agent/node/agent.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

#include "agent/launch/process_launcher.h"
#include "agent/mig/discovery.h"
#include "agent/node/backoff.h"
#include "agent/node/node_identity.h"
#include "agent/nvml/fake_nvml.h"
#include "agent/nvml/lib_nvml.h"

namespace carve::agent::node {
namespace fs = std::filesystem;

Agent::Agent(AgentOptions options, ControlPlane& control)
    : options_(std::move(options)),
      control_(control),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock::Get()) {}

Agent::~Agent() { Stop(); }

Result<std::unique_ptr<Agent>> Agent::Create(AgentOptions options, ControlPlane& control) {
  if (options.node_id.empty()) return InvalidArgument("the agent's node id is empty");
  if (options.data_dir.empty()) return InvalidArgument("the agent's data dir is empty");
  std::unique_ptr<Agent> agent(new Agent(std::move(options), control));
  CARVE_RETURN_IF_ERROR(agent->Init());
  return agent;
}

Status Agent::ChooseDriver() {
  const std::string& want = options_.driver;
  if (want != "" && want != "nvml" && want != "sim") {
    return InvalidArgument(fmt::format("driver \"{}\" is not nvml or sim", want));
  }
  if (options_.nvml != nullptr) {
    nvml_ = options_.nvml;
    driver_ = want.empty() ? "sim" : want;
    return OkStatus();
  }
  if (want != "sim") {
    auto lib = LibNvml::Load(options_.nvml_library);
    Status ok = lib.has_value() ? (*lib)->Init() : Status(lib.error());
    Result<uint32_t> count = ok ? (*lib)->DeviceCount() : Result<uint32_t>(ok.error());
    if (count.has_value() && *count >= 1) {
      owned_nvml_ = std::move(lib).value();
      nvml_ = owned_nvml_.get();
      driver_ = "nvml";
      return OkStatus();
    }
    const Error why =
        count.has_value()
            ? Unavailable(fmt::format("{} loaded but sees no GPU", options_.nvml_library))
            : count.error();
    if (want == "nvml") return why;
    spdlog::info("NVML not usable ({}); using simulated GPUs", why.message);
  }
  std::string text = options_.sim_config;
  if (text.empty()) {
    if (options_.instance_type.empty()) {
      return InvalidArgument(
          "the sim driver needs a GPU configuration (--sim-config) or an instance type "
          "(--instance-type) to simulate");
    }
    CARVE_ASSIGN_OR_RETURN(text, SimConfigFor(options_.instance_type));
  }
  if (text.find("seed") == std::string::npos) {
    // Distinct simulated nodes get distinct GPU uuids.
    text += fmt::format(", seed: {}", std::hash<std::string>{}(options_.node_id) % 100000);
  }
  CARVE_ASSIGN_OR_RETURN(std::unique_ptr<FakeNvml> fake, FakeNvml::FromText(text));
  owned_nvml_ = std::move(fake);
  nvml_ = owned_nvml_.get();
  driver_ = "sim";
  return OkStatus();
}

Status Agent::Init() {
  std::error_code ec;
  options_.data_dir = fs::absolute(options_.data_dir, ec).lexically_normal().string();
  if (!options_.data_dir.empty() && options_.data_dir.back() == '/') options_.data_dir.pop_back();
  fs::create_directories(options_.data_dir, ec);
  if (ec) {
    return Internal(fmt::format("cannot create data dir {}: {}", options_.data_dir, ec.message()));
  }
  CARVE_RETURN_IF_ERROR(ChooseDriver());
  CARVE_ASSIGN_OR_RETURN(NodeInventory inventory, DiscoverNode(*nvml_));
  std::string instance_type = options_.instance_type;
  if (instance_type.empty()) {
    std::vector<const catalog::GpuModel*> models;
    for (const DiscoveredGpu& g : inventory.gpus) models.push_back(g.model);
    const int vcpus = static_cast<int>(std::thread::hardware_concurrency());
    CARVE_ASSIGN_OR_RETURN(instance_type, DeriveInstanceType(models, vcpus));
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  registration_ = BuildRegistration(
      {options_.node_id, instance_type, driver_, host, options_.data_dir}, inventory);

  gpus_ = std::make_unique<GpuApplier>(*nvml_, clock_, options_.gpu_retry_after);
  if (driver_ == "sim") {
    gpus_->set_carve_delay(options_.sim_carve_time, [this](auto d) { return SleepFor(d); });
  }
  CARVE_RETURN_IF_ERROR(gpus_->Init());
  launch::Launcher* launcher = options_.launcher;
  if (launcher == nullptr) {
    owned_launcher_ = std::make_unique<launch::ProcessLauncher>();
    launcher = owned_launcher_.get();
  }
  WorkloadOptions w;
  const char* path = std::getenv("PATH");
  w.command = {options_.node_id, options_.data_dir, options_.carve_binary,
               !options_.search_path.empty() ? options_.search_path
                                             : (path != nullptr ? path : "/usr/bin:/bin")};
  if (!options_.cdi_spec_dirs.empty()) w.command.cdi_spec_dirs = options_.cdi_spec_dirs;
  w.interposer_path = options_.interposer_path;
  w.mps_control_path = options_.mps_control_path;
  w.cgroup_root = options_.cgroup_root;
  w.stop_grace = options_.stop_grace;
  w.initial_backoff = options_.restart_initial_backoff;
  w.max_backoff = options_.restart_max_backoff;
  w.probe_interval = options_.probe_interval;
  w.log_max_bytes = options_.log_max_bytes;
  w.share_memory_slack_mib = options_.share_memory_slack_mib;
  CARVE_ASSIGN_OR_RETURN(w.sandbox, WorkloadSandbox::Create(options_.sandbox, options_.data_dir,
                                                            w.command.search_path));
  workloads_ = std::make_unique<WorkloadManager>(std::move(w), *launcher, clock_, *gpus_);
  spdlog::info("node {}: {} x GPU, instance type {}, driver {}", options_.node_id,
               registration_.gpus.size(), instance_type, driver_);
  return OkStatus();
}

void Agent::Start() {
  if (started_) return;
  started_ = true;
  if (options_.fence) {
    if (Status s = StartFence(); !s) {
      spdlog::error("node {}: {}; workloads of a frozen agent will not be fenced", options_.node_id,
                    s.error().message);
    }
  }
  threads_.emplace_back([this] { WatchLoop(); });
  threads_.emplace_back([this] { ApplyLoop(); });
  threads_.emplace_back([this] { ReportLoop(); });
  if (fence_) threads_.emplace_back([this] { BeatLoop(); });
}

void Agent::Stop() {
  StopFence();  // first: an agent on its way out must not look frozen
  stopping_ = true;
  {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

Status Agent::StartFence() {
  CARVE_ASSIGN_OR_RETURN(fence_, FenceBeat::Create(options_.data_dir + "/fence"));
  launch::LaunchRequest r;
  r.argv = {options_.carve_binary, "agent-fence", "--data-dir",
            options_.data_dir,     "--agent-pid", std::to_string(::getpid())};
  const char* path = std::getenv("PATH");
  r.env = {{"PATH", path != nullptr ? path : "/usr/bin:/bin"}};
  r.stdout_path = options_.data_dir + "/fence.log";
  r.stderr_path = r.stdout_path;
  auto started = watchdog_launcher_.Start(r);
  if (!started) {
    fence_.reset();
    return Error{started.error().code,
                 "cannot start the fence watchdog: " + started.error().message};
  }
  watchdog_ = *started;
  return OkStatus();
}

void Agent::StopFence() {
  if (!fence_ || !watchdog_) return;
  fence_->StandDown();
  (void)watchdog_launcher_.Stop(*watchdog_, std::chrono::seconds(1));
  watchdog_.reset();
}

void Agent::BeatLoop() {
  while (!stopping_) {
    fence_->Beat();
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, options_.fence_beat, [&] { return stopping_.load(); });
  }
}

void Agent::StopWorkloads() {
  Stop();
  if (workloads_) workloads_->StopAll();
}

std::string Agent::epoch() const {
  std::lock_guard lock(mu_);
  return need_register_ ? "" : epoch_;
}

protocol::StatusReport Agent::CurrentStatus() const {
  std::lock_guard lock(mu_);
  return status_;
}

std::chrono::milliseconds Agent::Heartbeat() const {
  if (options_.heartbeat_interval.count() > 0) return options_.heartbeat_interval;
  std::lock_guard lock(mu_);
  return server_heartbeat_;
}

bool Agent::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [&] { return stopping_.load(); });
  return !stopping_;
}

bool Agent::RegisterOnce() {
  Result<protocol::RegisterReply> reply = control_.Register(registration_);
  if (!reply) {
    spdlog::warn("node {}: registration failed: {}; retrying with backoff", options_.node_id,
                 reply.error().message);
    return false;
  }
  {
    std::lock_guard lock(mu_);
    if (epoch_ != reply->epoch) status_.applied_version = 0;  // Versions start over.
    epoch_ = reply->epoch;
    if (reply->heartbeat_interval_ms > 0) {
      server_heartbeat_ = std::chrono::milliseconds(reply->heartbeat_interval_ms);
    }
    if (fence_ && reply->node_timeout_ms > 0) {
      fence_->Arm(FenceAfter(std::chrono::milliseconds(reply->node_timeout_ms), server_heartbeat_));
    }
    server_wants_status_ = true;  // A new registration knows no status of this agent yet.
    report_now_ = true;
    cv_.notify_all();
  }
  need_register_ = false;
  spdlog::info("node {} registered (server epoch {})", options_.node_id, reply->epoch);
  return true;
}

}  // namespace carve::agent::node
