#include "server/nodes/node_driver.h"

#include <fmt/format.h>

#include <mutex>
#include <optional>
#include <thread>

namespace carve::server::nodes {

Status NodeDriver::CarveNodes(const std::vector<NodeId>& nodes, int gpus,
                              const core::Layout& layout, const std::atomic<bool>& abort) {
  std::mutex mu;
  std::optional<Error> failed;
  std::vector<std::thread> threads;
  threads.reserve(nodes.size());
  for (const NodeId& node : nodes) {
    threads.emplace_back([&, node] {
      for (int g = 0; g < gpus; ++g) {
        if (abort) return;
        Status st = CarveGpu(node, GpuIndex(static_cast<uint32_t>(g)), layout);
        if (!st.ok()) {
          std::lock_guard lock(mu);
          if (!failed) {
            failed = Error{st.error().code, fmt::format("carving GPU {} of {} failed: {}", g,
                                                        node.value(), st.error().message)};
          }
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (failed) return *failed;
  if (abort) return Unavailable("the carve was aborted");
  return OkStatus();
}

}  // namespace carve::server::nodes
