// WorkloadSandbox: decides, for each process the agent launches for a tenant (a process-runtime
// copy, a queue job task, a Ray process), whether and how it is sandboxed, and wraps its
// LaunchRequest (launch/sandbox.h). Containers get the account's host ids through podman's or
// docker's options. docs/security.md, "Sandbox" and "Containers".
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/launch/device_binding.h"
#include "agent/launch/launcher.h"
#include "agent/launch/port_guard.h"
#include "agent/launch/sandbox.h"
#include "agent/launch/sandbox_uids.h"
#include "protocol/agent_protocol.h"

namespace carve::agent::node {

// The uid allocation of one host, shared by the agents that run on it (a server's embedded
// agents simulate several nodes on one host): two accounts never get one host uid, so neither
// can signal, trace or read the other's processes. launch::SandboxUids, made thread-safe.
class SharedSandboxUids {
 public:
  static Result<std::shared_ptr<SharedSandboxUids>> Open(const std::string& path, uint32_t base,
                                                         uint32_t count, uint32_t container_base);
  Result<uint32_t> UidFor(const std::string& account);
  Result<launch::IdRange> ContainerIdsFor(const std::string& account);

 private:
  explicit SharedSandboxUids(launch::SandboxUids uids) : uids_(std::move(uids)) {}
  std::mutex mu_;
  launch::SandboxUids uids_;
};

struct SandboxOptions {
  launch::SandboxMode mode = launch::SandboxMode::kAuto;
  uint32_t uid_base = launch::kDefaultSandboxUidBase;
  uint32_t uid_count = launch::kDefaultSandboxUidCount;
  // The first host id of the containers' blocks (SandboxUids, --sandbox-container-uid-base).
  uint32_t container_uid_base = launch::kDefaultContainerUidBase;
  // Keep other accounts off each workload's ports with iptables rules (launch::PortGuard;
  // --sandbox-network auto). Off by default here so that a test never edits its host's tables.
  bool guard_ports = false;
  // The host's allocation when several agents share the host; null: the agent's own, in
  // <data_dir>/sandbox-uids.
  std::shared_ptr<SharedSandboxUids> shared_uids;
  // More directories no workload may see besides the agent's data dir: an embedded agent's
  // server data dir (credentials, store, every node's logs).
  std::vector<std::string> hidden;
  // Paths every sandboxed process may read although they lie under /tmp: the directory of the
  // agent's own executable always (its `carve testmodel`, and beside it in a build tree the
  // interposer and the probes), and these (`--sandbox-read-only`, or CARVE_SANDBOX_READ_ONLY,
  // ':'-separated, which the test suites set to the checkout). The hidden directories stay
  // hidden even inside them.
  std::vector<std::string> visible;
};

class WorkloadSandbox {
 public:
  // Probes the host (launch::ProbeSandbox) unless the mode is off, and opens the uid allocation
  // in <data_dir>/sandbox-uids. Logs once what it will do: a warning for off, and for auto or
  // required on a host that cannot sandbox, naming why. Errors: SandboxUids::Open's.
  static Result<std::unique_ptr<WorkloadSandbox>> Create(const SandboxOptions& options,
                                                         const std::string& data_dir,
                                                         const std::string& search_path);

  // `request` for workload `w` (its directory `workload_dir`, bound with `binding`), wrapped in
  // the sandbox when `w` runs a command. When it runs an image (on a node that sandboxes), the
  // runtime's options get the account's identity: for podman `--uidmap`/`--gidmap` onto the
  // account's container block B (SandboxUids::ContainerIdsFor), for docker `--user=U:U
  // --cap-drop=ALL` with the account's uid U. Makes the log directory and an mGPU ledger the
  // account's (B or U for a container). FailedPrecondition when the launch must not run: mode
  // required on a host that cannot sandbox, or mode auto there for an account other than the first
  // one that ran here; the message names the account and the reason. Errors of SandboxUids::UidFor,
  // and Internal when the log directory cannot be given to the uid.
  Result<launch::LaunchRequest> Wrap(const protocol::WorkloadDesired& w,
                                     const std::string& workload_dir,
                                     const launch::DeviceBinding& binding,
                                     launch::LaunchRequest request);

  // Whether launches are sandboxed (the mode is not off and the host can).
  bool active() const { return tools_.has_value(); }

  // Lets only `w`'s account (of all tenants) connect to `ports` (launch::PortGuard), before `w`
  // starts. OK and nothing done when the sandbox is inactive or the guard is off. When the guard
  // was asked for and this node cannot keep it (no iptables, iptables refusing): OK with the
  // ports open under --sandbox auto (the start logged why), FailedPrecondition naming why under
  // required. PortGuard::Guard's errors.
  Status GuardPorts(const protocol::WorkloadDesired& w, const std::vector<int>& ports);

  // Takes back what GuardPorts did for `ports` (the workload stopped).
  void ReleasePorts(const std::vector<int>& ports);

 private:
  WorkloadSandbox(SandboxOptions options, std::string data_dir,
                  std::shared_ptr<SharedSandboxUids> uids)
      : options_(std::move(options)), data_dir_(std::move(data_dir)), uids_(std::move(uids)) {}
  // Sets guard_, or guard_cannot_ and logs why.
  void StartGuard(const std::string& search_path);

  SandboxOptions options_;
  std::string data_dir_;
  std::shared_ptr<SharedSandboxUids> uids_;
  std::optional<launch::SandboxTools> tools_;  // set when the host can sandbox
  std::unique_ptr<launch::PortGuard> guard_;   // set when ports are guarded
  std::string guard_cannot_;                   // why they are not, when asked for
  std::string cannot_;                         // why it cannot, when not
  std::string first_account_;                  // auto without a sandbox: the one account allowed
};

// The account of a workload id "<account>/<component>/<uid>".
std::string AccountOf(const std::string& workload_id);

}  // namespace carve::agent::node
