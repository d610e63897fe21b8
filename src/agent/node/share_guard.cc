#include "agent/node/share_guard.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace carve::agent::node {

std::vector<ShareOverrun> FindShareOverruns(std::span<const ShareHolding> shares,
                                            std::span<const protocol::GpuStatus> gpus,
                                            int64_t slack_mib) {
  std::vector<ShareOverrun> out;
  for (const ShareHolding& share : shares) {
    const auto gpu = std::find_if(gpus.begin(), gpus.end(), [&](const protocol::GpuStatus& g) {
      return g.index == share.gpu;
    });
    if (gpu == gpus.end()) continue;
    ShareOverrun o{share.workload, share.gpu, 0, share.quota_mib, {}};
    for (const protocol::ProcessMemory& p : gpu->processes) {
      const int pid = static_cast<int>(p.pid);
      if (std::find(share.pids.begin(), share.pids.end(), pid) == share.pids.end()) continue;
      o.used_mib += p.used_mib;
      o.pids.push_back(pid);
    }
    if (o.used_mib > share.quota_mib + slack_mib) out.push_back(std::move(o));
  }
  return out;
}

std::string DescribeOverrun(const ShareOverrun& o, int64_t slack_mib) {
  return fmt::format(
      "held {} MiB of device memory on GPU {} (pids {}) as NVML counts it, over its quota of {} "
      "MiB plus the {} MiB allowed for a CUDA context; stopped, since memory past the quota is "
      "what other shares on the card were promised (it allocated around libcarve-mgpu.so)",
      o.used_mib, o.gpu, fmt::join(o.pids, ", "), o.quota_mib, slack_mib);
}

}  // namespace carve::agent::node
