// The environment of an MPS-enforced mGPU worker and of the MPS control daemon of its card.
//
// One daemon per shared card, each with its own pipe and log directory (so daemons of different
// cards never meet), started with CUDA_VISIBLE_DEVICES naming the card by UUID. A worker gets the
// same pipe directory, the card's UUID, and its share: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (an
// upper bound on the SMs its kernels may occupy) and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (device
// memory it may allocate, "0=<MiB>M": device 0 is the only device the worker sees).
//
// MPS trade-offs (docs/interposer.md): the thread percentage caps but reserves nothing, so a
// worker gets less than its share when neighbours saturate the SMs it shares with them, and
// memory bandwidth and L2 stay shared; all clients of one MPS server share a failure domain (a
// fatal GPU exception in one client tears down the server and every client on it).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace carve::agent::mps {

struct MpsDirs {
  std::string pipe_dir;
  std::string log_dir;
};

// <root>/<gpu_uuid>/pipe and <root>/<gpu_uuid>/log. InvalidArgument for an empty root or a UUID
// that is not a plain file name.
Result<MpsDirs> MpsDirsFor(const std::string& root, const std::string& gpu_uuid);

struct MpsShare {
  uint32_t core_percent = 100;  // 1..100
  uint64_t memory_mib = 0;      // > 0
};

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// The worker's variables. InvalidArgument naming the field when the share is out of range.
Result<EnvVars> MpsWorkerEnv(const MpsDirs& dirs, const std::string& gpu_uuid,
                             const MpsShare& share);
// The control daemon's variables.
EnvVars MpsDaemonEnv(const MpsDirs& dirs, const std::string& gpu_uuid);

}  // namespace carve::agent::mps
