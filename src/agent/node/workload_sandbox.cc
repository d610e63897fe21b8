#include "agent/node/workload_sandbox.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "agent/node/workload_command.h"
#include "protocol/launch_inputs.h"

namespace carve::agent::node {
namespace fs = std::filesystem;

namespace {

// The paths a sandboxed process may read wherever they lie (SandboxOptions::visible): the
// directory of this executable, the configured ones and CARVE_SANDBOX_READ_ONLY's, those that
// exist, each once.
std::vector<std::string> VisiblePaths(const std::vector<std::string>& configured) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& path) {
    std::error_code ec;
    const fs::path canonical = fs::canonical(path, ec);
    if (ec || path.empty()) return;
    if (std::find(out.begin(), out.end(), canonical.string()) == out.end()) {
      out.push_back(canonical.string());
    }
  };
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) add(self.parent_path().string());
  for (const auto& path : configured) add(path);
  if (const char* env = std::getenv("CARVE_SANDBOX_READ_ONLY"); env != nullptr) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      add(std::string(rest.substr(0, colon)));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return out;
}

bool Exists(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::exists(path, ec);
}

// The paths the workload's own files take besides its logs: what it must read and write.
void AddBindingPaths(const launch::DeviceBinding& binding, launch::SandboxSpec& spec) {
  if (const auto* share = std::get_if<launch::MgpuBinding>(&binding)) {
    spec.writable.push_back(share->ledger_path);  // the interposer charges it (O_RDWR, mmap)
    spec.read_only.push_back(share->interposer_path);
    spec.private_pids = false;
  }
  if (const auto* mps = std::get_if<launch::MpsBinding>(&binding)) {
    spec.writable.push_back(mps->dirs.pipe_dir);
    spec.writable.push_back(mps->dirs.log_dir);
    spec.private_ipc = false;
    spec.private_pids = false;
  }
}

Status GiveTo(const std::string& path, uint32_t uid) {
  // lchown: never follow a link someone put in place of the path.
  if (::lchown(path.c_str(), uid, uid) != 0) {
    return Internal(
        fmt::format("cannot give {} to sandbox uid {}: {}", path, uid, std::strerror(errno)));
  }
  return OkStatus();
}

}  // namespace

std::string AccountOf(const std::string& workload_id) {
  return workload_id.substr(0, workload_id.find('/'));
}

Result<std::shared_ptr<SharedSandboxUids>> SharedSandboxUids::Open(const std::string& path,
                                                                   uint32_t base, uint32_t count,
                                                                   uint32_t container_base) {
  CARVE_ASSIGN_OR_RETURN(launch::SandboxUids uids,
                         launch::SandboxUids::Open(path, base, count, container_base));
  return std::shared_ptr<SharedSandboxUids>(new SharedSandboxUids(std::move(uids)));
}

Result<uint32_t> SharedSandboxUids::UidFor(const std::string& account) {
  std::lock_guard lock(mu_);
  return uids_.UidFor(account);
}

Result<launch::IdRange> SharedSandboxUids::ContainerIdsFor(const std::string& account) {
  std::lock_guard lock(mu_);
  return uids_.ContainerIdsFor(account);
}

Result<std::unique_ptr<WorkloadSandbox>> WorkloadSandbox::Create(const SandboxOptions& options,
                                                                 const std::string& data_dir,
                                                                 const std::string& search_path) {
  std::shared_ptr<SharedSandboxUids> uids = options.shared_uids;
  if (!uids) {
    CARVE_ASSIGN_OR_RETURN(uids,
                           SharedSandboxUids::Open(data_dir + "/sandbox-uids", options.uid_base,
                                                   options.uid_count, options.container_uid_base));
  }
  std::unique_ptr<WorkloadSandbox> s(new WorkloadSandbox(options, data_dir, std::move(uids)));
  if (options.mode == launch::SandboxMode::kOff) {
    spdlog::warn(
        "--sandbox off: tenant processes run as the agent's own user and see its data dir {} "
        "(credentials, store, every account's logs); use only for development",
        data_dir);
    return s;
  }
  Result<launch::SandboxTools> tools = launch::ProbeSandbox(search_path, options.uid_base);
  if (tools) {
    s->tools_ = *tools;
    spdlog::info("sandbox: tenant processes run as uids {}..{} under {} and {}", options.uid_base,
                 options.uid_base + options.uid_count - 1, tools->setpriv, tools->bwrap);
    if (options.guard_ports) s->StartGuard(search_path);
    return s;
  }
  s->cannot_ = tools.error().message;
  if (options.mode == launch::SandboxMode::kRequired) {
    spdlog::error(
        "--sandbox required, and this node cannot sandbox: {}; every process launch of "
        "a tenant will fail",
        s->cannot_);
  } else {
    spdlog::warn(
        "--sandbox auto: this node cannot sandbox ({}), so it runs processes of one "
        "account only",
        s->cannot_);
  }
  return s;
}

void WorkloadSandbox::StartGuard(const std::string& search_path) {
  std::string iptables = FindOnPath("iptables", search_path + ":/usr/sbin:/sbin");
  if (iptables.empty()) {
    guard_cannot_ = "iptables (Debian package iptables) is not installed on this node";
  } else {
    auto guard = launch::PortGuard::Create(iptables, launch::PortGuard::ChainFor(data_dir_),
                                           options_.uid_base, launch::RunCommand);
    if (guard) {
      guard_ = std::move(guard).value();
      spdlog::info("sandbox: tenants' ports are guarded by iptables chain {}", guard_->chain());
      return;
    }
    guard_cannot_ = guard.error().message;
  }
  if (options_.mode == launch::SandboxMode::kRequired) {
    spdlog::error(
        "--sandbox required, and this node cannot keep tenants off each other's ports: {}; "
        "every launch of a tenant will fail (--sandbox-network off accepts the risk)",
        guard_cannot_);
  } else {
    spdlog::warn(
        "--sandbox auto: this node cannot keep tenants off each other's ports ({}): a tenant's "
        "process can connect to another account's copy on 127.0.0.1",
        guard_cannot_);
  }
}

Status WorkloadSandbox::GuardPorts(const protocol::WorkloadDesired& w,
                                   const std::vector<int>& ports) {
  if (!tools_ || !options_.guard_ports) return OkStatus();
  if (!guard_) {
    if (options_.mode != launch::SandboxMode::kRequired) return OkStatus();
    return FailedPrecondition(fmt::format(
        "{} is not started: --sandbox required, and this node cannot keep tenants off each "
        "other's ports: {}",
        w.id, guard_cannot_));
  }
  const std::string account = AccountOf(w.id);
  launch::PortOwner owner;
  CARVE_ASSIGN_OR_RETURN(owner.uid, uids_->UidFor(account));
  CARVE_ASSIGN_OR_RETURN(owner.containers, uids_->ContainerIdsFor(account));
  for (int port : ports) {
    if (Status s = guard_->Guard(port, owner); !s) {
      ReleasePorts(ports);
      return FailedPrecondition(fmt::format("{} is not started: its port {} cannot be guarded: {}",
                                            w.id, port, s.error().message));
    }
  }
  return OkStatus();
}

void WorkloadSandbox::ReleasePorts(const std::vector<int>& ports) {
  if (!guard_) return;
  for (int port : ports) guard_->Release(port);
}

Result<launch::LaunchRequest> WorkloadSandbox::Wrap(const protocol::WorkloadDesired& w,
                                                    const std::string& workload_dir,
                                                    const launch::DeviceBinding& binding,
                                                    launch::LaunchRequest request) {
  if (options_.mode == launch::SandboxMode::kOff) return request;
  const std::string account = AccountOf(w.id);
  // An image runs under podman/docker, which gives it its own mounts and namespaces
  // (workload_command.h); on a node that sandboxes, its program never runs as the host's root.
  if (!w.image.empty()) {
    if (!tools_) return request;
    auto options_end = std::find(request.argv.begin(), request.argv.end(), "--");
    if (options_end == request.argv.end()) {
      return Internal(fmt::format("{}: the container command has no '--' before its image", w.id));
    }
    std::vector<std::string> identity;
    uint32_t owner = 0;  // the host uid of the container's root (podman) or of its program
    if (fs::path(request.argv.front()).filename() == "podman") {
      // A user namespace: the image's own users, root included, map onto the account's block of
      // unprivileged host ids, and its capabilities hold inside that namespace only. An image
      // that needs root inside works, and another account's container is another block.
      CARVE_ASSIGN_OR_RETURN(const launch::IdRange ids, uids_->ContainerIdsFor(account));
      identity = {fmt::format("--uidmap=0:{}:{}", ids.first, ids.count),
                  fmt::format("--gidmap=0:{}:{}", ids.first, ids.count)};
      owner = ids.first;
    } else {
      // docker maps users per daemon (userns-remap), not per container: the program runs as the
      // account's uid with no capability, as a sandboxed process does.
      CARVE_ASSIGN_OR_RETURN(owner, uids_->UidFor(account));
      identity = {fmt::format("--user={}:{}", owner, owner), "--cap-drop=ALL"};
    }
    if (const auto* share = std::get_if<launch::MgpuBinding>(&binding)) {
      CARVE_RETURN_IF_ERROR(GiveTo(share->ledger_path, owner));  // the interposer charges it
    }
    request.argv.insert(options_end, identity.begin(), identity.end());
    return request;
  }
  if (!tools_) {
    if (options_.mode == launch::SandboxMode::kRequired) {
      return FailedPrecondition(fmt::format(
          "{} of account {} is not started: --sandbox required, and this node cannot sandbox: {}",
          w.id, account, cannot_));
    }
    if (first_account_.empty()) first_account_ = account;
    if (account != first_account_) {
      return FailedPrecondition(fmt::format(
          "{} of account {} is not started: this node cannot sandbox tenant code ({}), so with "
          "--sandbox auto it runs only the processes of the first account that ran here, {}; "
          "fix the host or run the agent with --sandbox off to accept the risk",
          w.id, account, cannot_, first_account_));
    }
    return request;
  }
  CARVE_ASSIGN_OR_RETURN(const uint32_t uid, uids_->UidFor(account));
  launch::SandboxSpec spec;
  spec.uid = uid;
  spec.gid = uid;
  for (const auto& path : VisiblePaths(options_.visible)) spec.visible.push_back(path);
  for (const auto& dir : options_.hidden) {
    if (Exists(dir)) spec.hidden.push_back(dir);
  }
  spec.hidden.push_back(data_dir_);  // holds the workload root, logs, pid files, ledgers
  // The log directory is the workload's own, writable: its stdout/stderr land there.
  const std::string log_dir = fs::path(request.stdout_path).parent_path().string();
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  CARVE_RETURN_IF_ERROR(GiveTo(log_dir, uid));
  spec.writable.push_back(log_dir);
  AddBindingPaths(binding, spec);
  if (const auto* share = std::get_if<launch::MgpuBinding>(&binding)) {
    CARVE_RETURN_IF_ERROR(GiveTo(share->ledger_path, uid));
  }
  if (Exists(workload_dir)) spec.read_only.push_back(workload_dir);  // {file_NAME} files
  // Model data, resolved inside the model roots again (BuildLaunchRequest already refused it
  // otherwise): read-only, even when a root is inside a hidden directory.
  if (auto it = w.values.find("model_data");
      it != w.values.end() && protocol::IsLocalModelData(it->second)) {
    CARVE_ASSIGN_OR_RETURN(std::string data,
                           protocol::ResolveModelData(it->second, w.model_roots, true));
    spec.read_only.push_back(data);
  }
  // bwrap cannot bind what does not exist (an MPS log dir the daemon has not made yet).
  std::erase_if(spec.writable, [](const std::string& p) { return !Exists(p); });
  request.argv = launch::SandboxArgv(spec, *tools_, request.argv);
  return request;
}

}  // namespace carve::agent::node
