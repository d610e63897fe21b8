// WorkloadSandbox: decides, for each process the agent launches for a tenant (a process-runtime
// copy, a queue job task, a Ray process), whether and how it is sandboxed, and wraps its
// LaunchRequest (launch/sandbox.h). Containers get the account's host ids through podman's or
// docker's options. docs/security.md, "Sandbox" and "Containers".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/launch/device_binding.h"
#include "agent/launch/launcher.h"
#include "agent/launch/sandbox.h"
#include "agent/launch/sandbox_uids.h"
#include "protocol/agent_protocol.h"

namespace carve::agent::node {

struct SandboxOptions {
  launch::SandboxMode mode = launch::SandboxMode::kAuto;
  uint32_t uid_base = launch::kDefaultSandboxUidBase;
  uint32_t uid_count = launch::kDefaultSandboxUidCount;
  // The first host id of the containers' blocks (SandboxUids, --sandbox-container-uid-base).
  uint32_t container_uid_base = launch::kDefaultContainerUidBase;
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

 private:
  WorkloadSandbox(SandboxOptions options, std::string data_dir, launch::SandboxUids uids)
      : options_(std::move(options)), data_dir_(std::move(data_dir)), uids_(std::move(uids)) {}

  SandboxOptions options_;
  std::string data_dir_;
  launch::SandboxUids uids_;
  std::optional<launch::SandboxTools> tools_;  // set when the host can sandbox
  std::string cannot_;                         // why it cannot, when not
  std::string first_account_;                  // auto without a sandbox: the one account allowed
};

// The account of a workload id "<account>/<component>/<uid>".
std::string AccountOf(const std::string& workload_id);

}  // namespace carve::agent::node
