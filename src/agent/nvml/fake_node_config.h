// FakeNodeConfig: what a fake NVML node looks like, parsed from a short text so tests, the fake
// libnvidia-ml.so.1 (env CARVE_FAKE_NVML_CONFIG) and demos can stand in for any catalog node.
//
// Text: clauses separated by ',', ';' or newlines; '#' starts a comment. Each clause is
// "key: value" (the colon may be a space):
//   gpus: 8 x a100-40gb      GPUs by catalog name (canonical id, display name or alias),
//                            repeatable, appended in order; "gpus: h200-141gb" means one.
//   driver: 550.54.15        what nvmlSystemGetDriverVersion reports (default 550.54.15).
//   mig: enabled             enabled | disabled | pending-enable | pending-disable (default:
//                            enabled); pending-* means the mode was set and awaits a GPU reset.
//   fail-create: 3           the 3rd GPU-instance creation fails with INSUFFICIENT_RESOURCES.
//   lost: 2                  GPU 2 answers NVML_ERROR_GPU_IS_LOST; repeatable.
//   process: pid=4242 gpu=0 mib=512   a compute process on a GPU; repeatable.
//   seed: 7                  varies the generated UUIDs so two fake nodes differ.
//   user: unprivileged       the caller is not root: while MIG is off, placement queries
//                            answer NVML_ERROR_NO_PERMISSION (default: root).
// Errors are InvalidArgument naming the clause and what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/gpu_model.h"
#include "common/result.h"

namespace carve::agent {

enum class FakeMigState { kEnabled, kDisabled, kPendingEnable, kPendingDisable };

struct FakeProcessConfig {
  uint32_t gpu = 0;
  uint32_t pid = 0;
  uint64_t used_mib = 0;
};

struct FakeNodeConfig {
  std::vector<const catalog::GpuModel*> gpus;
  std::string driver_version = "550.54.15";
  FakeMigState mig = FakeMigState::kEnabled;
  int fail_nth_create = 0;  // 0: never.
  std::vector<uint32_t> lost_gpus;
  std::vector<FakeProcessConfig> processes;
  uint32_t seed = 0;
  bool privileged = true;
};

Result<FakeNodeConfig> ParseFakeNodeConfig(std::string_view text);

// Reads CARVE_FAKE_NVML_CONFIG: a value starting with '/' names a file holding the text,
// anything else is the text itself. Unset means "gpus: 8 x a100-40gb" (a p4d node).
Result<FakeNodeConfig> FakeNodeConfigFromEnvironment();

}  // namespace carve::agent
