// WorkloadManager: binding a workload to its devices (a MIG partition, whole cards, or an mGPU
// share under the interposer, MPS or nothing), and holding running shares to their quotas.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent/launch/process_launcher.h"
#include "agent/launch/workload_spec.h"
#include "agent/node/share_guard.h"
#include "agent/node/workload_state.h"
#include "interposer/process_probe.h"

namespace carve::agent::node {
namespace fs = std::filesystem;

Result<launch::DeviceBinding> WorkloadManager::BindShare(Workload& w, int gpu,
                                                         const protocol::ShareSpec& share) {
  CARVE_ASSIGN_OR_RETURN(std::string uuid, gpus_.GpuUuid(gpu));
  CARVE_ASSIGN_OR_RETURN(int64_t card_mib, gpus_.GpuMemoryMib(gpu));
  const int64_t mib = share.memory_mib > 0 ? share.memory_mib : card_mib;
  if (share.enforcement == protocol::Enforcement::kMps) {
    CARVE_ASSIGN_OR_RETURN(mps::MpsDirs dirs,
                           mps::MpsDirsFor(options_.command.data_dir + "/mps", uuid));
    if (!mps_cards_.contains(gpu)) {
      CARVE_RETURN_IF_ERROR(mps_.Start(dirs, uuid));
      mps_cards_.insert(gpu);
      AddEvent(fmt::format("started the MPS control daemon of GPU {} ({})", gpu, uuid));
    }
    return launch::DeviceBinding{launch::MpsBinding{
        uuid, dirs,
        mps::MpsShare{static_cast<uint32_t>(share.core_percent), static_cast<uint64_t>(mib)}}};
  }
  if (share.enforcement == protocol::Enforcement::kNone) {
    // The queue asked for unenforced shares: the limits travel as plain variables only.
    return launch::DeviceBinding{
        launch::GpuBinding{{uuid},
                           {{"CARVE_MGPU_CORE_PERCENT", std::to_string(share.core_percent)},
                            {"CARVE_MGPU_MEMORY_MIB", std::to_string(mib)},
                            {"CARVE_MGPU_BURSTABLE", share.burstable ? "1" : "0"},
                            {"CARVE_MGPU_ENFORCEMENT", "none"}}}};
  }
  // Fail closed: a worker that should be limited and is not must be an error someone sees.
  const std::string& lib = options_.interposer_path;
  const std::string unenforced = fmt::format(
      "{} is an mGPU share (core {}%, memory {} MiB) enforced by libcarve-mgpu.so, and it is not "
      "started unenforced (a queue created with enforcement \"none\" allows that)",
      w.desired.id, share.core_percent, mib);
  if (lib.empty()) {
    return FailedPrecondition(fmt::format(
        "{}: this agent has no libcarve-mgpu.so (none was found beside carve; pass --interposer "
        "PATH to carve agent or carve server)",
        unenforced));
  }
  if (::access(lib.c_str(), R_OK) != 0) {
    return FailedPrecondition(fmt::format("{}: the interposer library {} cannot be read: {}",
                                          unenforced, lib, std::strerror(errno)));
  }
  const std::string ledger_path = w.dir + "/ledger";
  interposer::LedgerSettings settings;
  settings.worker_id = "carve-" + w.dir.substr(w.dir.size() - 8);
  settings.memory_limit_bytes = static_cast<uint64_t>(mib) * kMiB;
  settings.core_percent = static_cast<uint32_t>(share.core_percent);
  settings.burstable = share.burstable;
  auto probe = std::make_shared<interposer::ProcfsProcessProbe>();
  if (auto open = interposer::Ledger::Open(ledger_path, probe); open.has_value() && w.process) {
    // Adopted worker: keep its ledger and its charges, if the limits in it are still the ones
    // this agent set. The worker can write the file; one that raised its own limits is not
    // adopted (Start stops the process when adoption fails).
    const interposer::LedgerSettings& found = (*open)->settings();
    if (!(found == settings)) {
      return FailedPrecondition(fmt::format(
          "{}: its ledger {} holds memory {} MiB, core {}%, burstable {}, not the share's {} MiB, "
          "{}%, {}: the worker rewrote its own limits, so it is not adopted",
          w.desired.id, ledger_path, found.memory_limit_bytes / kMiB, found.core_percent,
          found.burstable, mib, share.core_percent, share.burstable));
    }
    w.ledger = std::move(open).value();
  } else {
    std::error_code ec;
    fs::remove(ledger_path, ec);
    CARVE_ASSIGN_OR_RETURN(w.ledger, launch::CreateWorkerLedger(ledger_path, settings));
  }
  return launch::DeviceBinding{launch::MgpuBinding{uuid, lib, ledger_path}};
}

Result<launch::DeviceBinding> WorkloadManager::Bind(Workload& w) {
  const protocol::DeviceRequest& dev = w.desired.device;
  if (dev.gpus.empty()) return launch::DeviceBinding{std::monostate{}};
  if (dev.share) return BindShare(w, dev.gpus.front(), *dev.share);
  if (dev.partition_start) {
    Result<std::string> uuid = gpus_.PartitionUuid(dev.gpus.front(), *dev.partition_start);
    if (!uuid && uuid.error().code == ErrorCode::kFailedPrecondition) {
      return Unavailable(fmt::format("waiting for the partition at slice {} of GPU {}: {}",
                                     *dev.partition_start, dev.gpus.front(), uuid.error().message));
    }
    if (!uuid) return uuid.error();
    return launch::DeviceBinding{launch::MigBinding{*uuid}};
  }
  launch::GpuBinding whole;
  for (int g : dev.gpus) {
    CARVE_ASSIGN_OR_RETURN(std::string uuid, gpus_.GpuUuid(g));
    whole.gpu_uuids.push_back(uuid);
  }
  return launch::DeviceBinding{std::move(whole)};
}

std::map<int, std::vector<std::string>> WorkloadManager::BusyGpus() const {
  std::map<int, std::vector<std::string>> busy;
  for (const auto& [id, w] : workloads_) {
    if (!w->supervisor) continue;
    const launch::CopyState s = w->supervisor->state();
    if (s == launch::CopyState::kSucceeded || s == launch::CopyState::kFailed ||
        s == launch::CopyState::kStopped) {
      continue;
    }
    for (int g : w->desired.device.gpus) busy[g].push_back(id);
  }
  return busy;
}

void WorkloadManager::HoldShareQuotas(const std::vector<protocol::GpuStatus>& gpus) {
  std::vector<ShareHolding> shares;
  for (const auto& [id, w] : workloads_) {
    const std::optional<protocol::ShareSpec>& share = w->desired.device.share;
    // Only quotas something enforces: a queue with enforcement "none" asked for none.
    if (!share || share->memory_mib <= 0 || share->enforcement == protocol::Enforcement::kNone)
      continue;
    if (!w->supervisor || w->desired.device.gpus.size() != 1) continue;
    const std::optional<launch::ProcessId> process = w->supervisor->process();
    if (!process) continue;
    std::vector<int> pids = launch::LiveMembers(*process);
    for (int pid : cgroups_.Members(fs::path(w->dir).filename().string())) pids.push_back(pid);
    shares.push_back({id, w->desired.device.gpus[0], share->memory_mib, std::move(pids)});
  }
  const int64_t slack = options_.share_memory_slack_mib;
  std::vector<std::pair<std::string, std::string>> stops;  // id, why
  for (const ShareOverrun& o : FindShareOverruns(shares, gpus, slack)) {
    stops.emplace_back(o.workload, DescribeOverrun(o, slack));
  }
  for (const auto& [id, w] : workloads_) {
    if (!w->ledger || !w->supervisor) continue;
    const interposer::LedgerSettings stored = w->ledger->StoredSettings();
    const interposer::LedgerSettings& set = w->ledger->settings();
    if (stored == set) continue;
    stops.emplace_back(
        id, fmt::format("rewrote the limits in its ledger (memory {} MiB, core {}%, burstable "
                        "{}; the share's are {} MiB, {}%, {}); stopped",
                        stored.memory_limit_bytes / kMiB, stored.core_percent, stored.burstable,
                        set.memory_limit_bytes / kMiB, set.core_percent, set.burstable));
  }
  for (const auto& [id, why] : stops) {
    Workload& w = *workloads_.at(id);
    if (!w.failed.empty()) continue;  // Both rules caught it.
    spdlog::warn("{} ({}) {}", Label(w.desired), id, why);
    Stop(w);
    w.supervisor.reset();
    w.process.reset();
    // Terminal until the desired entry changes, as a start that failed.
    w.failed = why;
    w.message = why;
    AddEvent(fmt::format("{} ({}) {}", Label(w.desired), id, why));
    changed_ = true;
  }
}

}  // namespace carve::agent::node
