// The tenant sandbox: how the agent wraps a process it launches for an account so that it runs
// as that account's unprivileged uid, sees the host read-only and cannot see carve's data
// (docs/security.md, "Sandbox"). Pure argv building plus one probe of the host.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace carve::launch {

// --sandbox: kAuto sandboxes when the host can and otherwise runs only one account's code;
// kRequired fails every launch it cannot sandbox; kOff runs tenant code as the agent (development).
enum class SandboxMode { kAuto, kRequired, kOff };

// "auto", "required", "off"; InvalidArgument naming the accepted values otherwise.
Result<SandboxMode> ParseSandboxMode(const std::string& text);
std::string SandboxModeName(SandboxMode mode);

// What one sandboxed process may see and be.
struct SandboxSpec {
  uint32_t uid = 0;
  uint32_t gid = 0;
  // Paths bound back read-only right after the private /tmp, before anything is hidden: the
  // installation's programs and libraries, which may lie under /tmp (a build tree, a CI clone).
  // A hidden directory inside one of them stays hidden.
  std::vector<std::string> visible;
  // Directories replaced by an empty tmpfs (carve's data dir, the workload root), in order.
  std::vector<std::string> hidden;
  // Paths bound back read-write (the workload's log directory, its ledger) and read-only (its
  // model data, its files): after the hidden ones, so a path inside a hidden dir reappears, and
  // the writable ones last, so a writable file inside a read-only directory stays writable.
  std::vector<std::string> writable;
  std::vector<std::string> read_only;
  // False for an MPS share: the MPS server's shared memory lives in the host's IPC namespace
  // and /dev/shm.
  bool private_ipc = true;
  // False for an mGPU share: the interposer records its pid in the ledger and the agent judges
  // liveness by that pid in the host's /proc (interposer/process_probe.h), so the worker must
  // see host pids. The host's /proc is then visible read-only, without a fresh mount.
  bool private_pids = true;
};

// The programs the sandbox needs, found on the host.
struct SandboxTools {
  std::string setpriv;  // util-linux setpriv(1)
  std::string bwrap;    // bubblewrap
};

// `bwrap <mounts> <namespaces> -- setpriv --reuid U --regid G --clear-groups --no-new-privs
// --inh-caps=-all --bounding-set=-all -- <argv...>`. bwrap runs as root (the agent), so it
// mounts with the agent's own privileges and resolves bind sources the account could not reach
// (a 0700 data dir); no user namespace is needed. setpriv then drops to U for good before the
// workload's program runs.
// Mounts: / read-only, /dev bound (GPU device nodes), a fresh /proc (with private_pids), private
// tmpfs /tmp (and /dev/shm with private_ipc), each hidden dir a tmpfs, then the read-only and
// writable binds, each mount point's parents created 0755.
// Namespaces: uts (pid with private_pids, ipc with private_ipc) unshared, the network shared
// (copies serve on a port); --new-session. No --die-with-parent: a copy outlives a restarted agent,
// which adopts it (pid_file.h); the agent stops it by launch id and cgroup instead.
std::vector<std::string> SandboxArgv(const SandboxSpec& spec, const SandboxTools& tools,
                                     const std::vector<std::string>& argv);

// Whether this host can sandbox: root, setpriv and bwrap on `search_path`, and a trial
// `bwrap ... setpriv ... /bin/true` as `trial_uid` that exits 0. FailedPrecondition naming the
// first missing piece.
Result<SandboxTools> ProbeSandbox(const std::string& search_path, uint32_t trial_uid);

}  // namespace carve::launch
