// The memory quota of an mGPU share, held from outside the worker.
//
// libcarve-mgpu.so charges what a worker allocates through the CUDA calls it hooks, inside the
// worker's own address space, against a ledger file the worker must be able to write. That keeps
// a cooperating worker under its quota at the moment it allocates, but a hostile one can step
// around it: a static binary, libcuda opened directly, LD_PRELOAD cleared before an exec, or the
// ledger rewritten. Its allocations then take device memory that the other shares on the card,
// possibly other accounts', were promised. NVML's per-process list comes from the driver, which
// the worker cannot touch: the agent sums it over the worker's processes and stops a worker that
// holds more than its quota plus a slack (a CUDA context, which the hooks never see).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "protocol/agent_protocol.h"

namespace carve::agent::node {

// One share with a memory quota, and its processes as the agent finds them (host pids).
struct ShareHolding {
  std::string workload;
  int gpu = 0;
  int64_t quota_mib = 0;
  std::vector<int> pids;
};

struct ShareOverrun {
  std::string workload;
  int gpu = 0;
  int64_t used_mib = 0;  // NVML's usedGpuMemory, summed over the share's processes
  int64_t quota_mib = 0;
  std::vector<int> pids;  // the share's processes NVML lists on its GPU
};

// The shares whose processes hold more than quota + slack_mib on their GPU, in `gpus` order.
// A GPU without a process list (NVML absent, or no metrics this pass) overruns nothing.
std::vector<ShareOverrun> FindShareOverruns(std::span<const ShareHolding> shares,
                                            std::span<const protocol::GpuStatus> gpus,
                                            int64_t slack_mib);

// "held 3072 MiB on GPU 0 (pids 41, 42) per NVML, over its quota of 1024 MiB plus 512 MiB ...".
std::string DescribeOverrun(const ShareOverrun& overrun, int64_t slack_mib);

}  // namespace carve::agent::node
