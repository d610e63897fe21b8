#include "cli/sandbox_flags.h"

namespace carve::cli {

void AddSandboxRangeFlags(CLI::App* cmd, uint32_t& uid_base, uint32_t& uid_count,
                          uint32_t& container_uid_base, std::string& network) {
  cmd->add_option("--sandbox-uid-base", uid_base,
                  "First uid of the range sandboxed tenant processes run as (one per account)")
      ->check(CLI::Range(1u, 0x7FFFFFFFu))
      ->capture_default_str();
  cmd->add_option("--sandbox-uid-count", uid_count,
                  "How many uids the range holds: the most accounts one host runs")
      ->check(CLI::Range(1u, 0x7FFFFFFFu))
      ->capture_default_str();
  cmd->add_option("--sandbox-container-uid-base", container_uid_base,
                  "First host id of the containers' blocks: podman maps each account's "
                  "container ids 0..65535 onto its own block of 65536 from here")
      ->check(CLI::Range(1u, 0xFFFEFFFEu))
      ->capture_default_str();
  cmd->add_option("--sandbox-network", network,
                  "auto: keep every other account's sandboxed processes off a tenant "
                  "workload's ports with an iptables chain of the agent's (when the host "
                  "sandboxes; with --sandbox required a node without iptables runs no tenant "
                  "code); off: leave the ports open to every local process. docs/security.md")
      ->check(CLI::IsMember({"auto", "off"}))
      ->envname("CARVE_SANDBOX_NETWORK")
      ->capture_default_str();
}

}  // namespace carve::cli
