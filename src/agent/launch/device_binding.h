// How a workload process is bound to its GPU slice, as environment variables.
//   MIG partition: CUDA_VISIBLE_DEVICES=MIG-<uuid> (the CUDA runtime then sees one device).
//   mGPU share, interposer mode: CUDA_VISIBLE_DEVICES=GPU-<uuid> of the card, LD_PRELOAD of
//     libcarve-mgpu.so and CARVE_MGPU_LEDGER=<ledger file> (docs/interposer.md); the agent
//     creates the ledger with CreateWorkerLedger before starting the worker, and owns it.
//   mGPU share, MPS mode: the card's UUID plus the MPS worker variables (agent/mps/mps_env.h).
//   Whole GPUs: CUDA_VISIBLE_DEVICES=GPU-<uuid>[,GPU-<uuid>...]; `extra` variables ride along
//     (the agent passes a share's limits this way when no enforcement library is installed).
// Pure apart from CreateWorkerLedger, which writes the ledger file.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "agent/launch/launcher.h"
#include "agent/mps/mps_env.h"
#include "interposer/ledger.h"

namespace carve::launch {

struct MigBinding {
  std::string mig_uuid;  // "MIG-<uuid>" as NVML reports it; a bare uuid gets the prefix
};
struct MgpuBinding {
  std::string gpu_uuid;         // "GPU-<uuid>" of the card
  std::string interposer_path;  // absolute path of libcarve-mgpu.so
  std::string ledger_path;      // absolute path of the worker's ledger
};
struct MpsBinding {
  std::string gpu_uuid;
  agent::mps::MpsDirs dirs;
  agent::mps::MpsShare share;
};
struct GpuBinding {
  std::vector<std::string> gpu_uuids;  // at least one
  EnvVars extra;                       // added after CUDA_VISIBLE_DEVICES
};
// The LD_PRELOAD value that loads the interposer at `interposer_path`: the path itself, except
// in an ASan build of carve (cmake/sanitizers.cmake), where the instrumented library needs the
// ASan runtime loaded first in a program that was not linked with it, so the runtime leads.
std::string InterposerPreload(const std::string& interposer_path);

// monostate: no GPU (CUDA_VISIBLE_DEVICES is set empty, so a CPU workload sees no device).
using DeviceBinding = std::variant<std::monostate, MigBinding, MgpuBinding, MpsBinding, GpuBinding>;

// InvalidArgument naming the field when a UUID is empty or a path is not absolute; the MPS
// share's errors are mps_env's.
Result<EnvVars> BindingEnv(const DeviceBinding& binding);

// Where libcarve-mgpu.so is for the carve executable at `carve_binary`: beside it (an install),
// in src/interposer/ below it (the build tree: the binary lands at the top of the build dir), or
// in ../lib/carve/ (a prefix install); the canonical path of the first that exists, "" when none.
std::string FindInterposerLibrary(const std::string& carve_binary);

// Creates the worker's ledger file (interposer/ledger.h), judging liveness through /proc.
// Errors are Ledger::Create's (AlreadyExists when a file is at `path`).
Result<std::unique_ptr<interposer::Ledger>> CreateWorkerLedger(
    const std::string& path, const interposer::LedgerSettings& settings);

}  // namespace carve::launch
