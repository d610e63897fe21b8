// PortGuard: keeps other accounts' sandboxed processes off the ports of a tenant's workloads.
//
// A sandboxed process shares the node's network namespace: copies serve on a loopback port the
// router reaches, and Ray processes talk across nodes. Without a rule, a tenant's job could
// connect to another tenant's copy on 127.0.0.1 and call its model directly, past the router's
// authentication. So the agent keeps one iptables chain of its own, jumped to from OUTPUT, and
// for each port of a tenant's workload three rules in it, matched on the connection's original
// destination port (conntrack, so a port podman publishes on 127.0.0.1 and DNATs into a
// container is held too):
//   --uid-owner U                 RETURN   the port's own account's processes
//   --uid-owner B-(B+65535)       RETURN   the port's own account's containers (SandboxUids)
//   --uid-owner T-4294967294      REJECT --reject-with tcp-reset   every other tenant id
// where T is the first tenant uid (the sandbox range's base, below every container block).
// carve's own processes (the router, the agent's health probes) run below T and pass, as does
// every host user. Below every port's rules, the chain ends with a reject of tenant ids leaving
// through a container bridge (podman+, cni-podman+, docker+): nobody's process reaches a
// container's bridge address directly, while a port published on 127.0.0.1 lets its own account
// through by the port's RETURN. The owner match sees locally created sockets only, which is
// what a sandboxed process on the node has; a container in its own network namespace cannot
// reach the node's loopback at all. docs/security.md, "The network".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/launch/sandbox_uids.h"
#include "common/result.h"

namespace carve::launch {

// Runs argv to its end: its exit status, and what it wrote to stderr (bounded); an error when it
// could not be run at all.
struct CommandOutcome {
  int status = 0;
  std::string error_output;
};
using CommandRunner = std::function<Result<CommandOutcome>(const std::vector<std::string>& argv)>;

// fork/exec of argv, stdin and stdout on /dev/null, the first 4 KiB of stderr kept.
Result<CommandOutcome> RunCommand(const std::vector<std::string>& argv);

// Who may connect to one port: its account's process uid and container block.
struct PortOwner {
  uint32_t uid = 0;
  IdRange containers;
};

class PortGuard {
 public:
  // A guard over chain `chain` (at most 28 characters, [A-Z0-9-]), run with `iptables` (a path),
  // that rejects tenant ids from `tenant_first` up. Makes the chain if it is missing, empties it
  // (an agent's restart re-guards the ports of the workloads it adopts) and hooks it into OUTPUT
  // once. FailedPrecondition naming the command and its output when iptables refuses.
  static Result<std::unique_ptr<PortGuard>> Create(std::string iptables, std::string chain,
                                                   uint32_t tenant_first, CommandRunner run);

  // The chain name for an agent whose data dir is `data_dir`: "CARVE-" and 8 hex digits of its
  // FNV-1a hash, so that agents sharing a host (a server's embedded ones) keep apart and one
  // agent finds its own chain again after a restart.
  static std::string ChainFor(const std::string& data_dir);

  // Only `owner`'s ids (and ids below tenant_first) may connect to `port` from now on; replaces
  // what the port had. FailedPrecondition when a rule cannot be added: the launch must not go on
  // unguarded.
  Status Guard(int port, const PortOwner& owner);

  // Drops the rules of `port` (a workload stopped). Failures are logged, not returned: a rule
  // left behind only keeps tenants off a port nobody serves.
  void Release(int port);

  const std::string& chain() const { return chain_; }

 private:
  PortGuard(std::string iptables, std::string chain, uint32_t tenant_first, CommandRunner run)
      : iptables_(std::move(iptables)),
        chain_(std::move(chain)),
        tenant_first_(tenant_first),
        run_(std::move(run)) {}

  // `iptables -w 5 <args>`; FailedPrecondition naming the command when it exits non-zero.
  Status Iptables(std::vector<std::string> args);
  std::vector<std::vector<std::string>> RulesFor(int port, const PortOwner& owner) const;
  std::vector<std::vector<std::string>> BridgeRules() const;

  std::string iptables_;
  std::string chain_;
  uint32_t tenant_first_;
  CommandRunner run_;
  std::map<int, std::vector<std::vector<std::string>>> rules_;  // port -> its rule specs
};

}  // namespace carve::launch
