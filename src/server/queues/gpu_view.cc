#include "server/queues/gpu_view.h"

#include <cmath>

namespace carve::server::queues {
namespace {

using nlohmann::json;

template <typename T>
json Measured(const std::optional<T>& v) {
  return v ? json(*v) : json("not measured");
}

json WorkerJson(const WorkerView& w) {
  json j{
      {"job", w.job},
      {"task", w.task},
      {"role", w.role},
      {"workload_id", w.workload_id},
      {"state", w.state},
      {"allocated", {{"core_percent", w.core_limit_percent}, {"memory_mib", w.memory_limit_mib}}},
      {"used",
       {{"core_percent", Measured(w.core_used_percent)},
        {"memory_mib", Measured(w.memory_used_mib)}}}};
  // The achieved compute share next to its limit: peers report this figure wrong or not at all,
  // so it is given as measured (percent of the card) and as a fraction of the limit.
  json achieved{{"limit_core_percent", w.core_limit_percent},
                {"achieved_core_percent", Measured(w.core_used_percent)}};
  if (w.core_used_percent && w.core_limit_percent > 0) {
    achieved["achieved_of_limit_percent"] =
        std::round(*w.core_used_percent * 1000.0 / w.core_limit_percent) / 10.0;
  }
  j["compute_share"] = achieved;
  return j;
}

}  // namespace

json ToJson(const QueueGpuView& v) {
  json cards = json::array();
  for (const auto& c : v.cards) {
    json workers = json::array();
    for (const auto& w : c.worker_views) workers.push_back(WorkerJson(w));
    cards.push_back(json{{"node", c.node},
                         {"gpu", c.gpu},
                         {"model", c.model},
                         {"memory_capacity_mib", c.memory_capacity_mib},
                         {"allocated",
                          {{"core_percent", c.core_allocated_percent},
                           {"memory_mib", c.memory_allocated_mib},
                           {"workers", c.workers}}},
                         {"used",
                          {{"utilization_percent", Measured(c.utilization_percent)},
                           {"memory_mib", Measured(c.memory_used_mib)}}},
                         {"workers", workers}});
  }
  return json{{"account", v.account},
              {"queue", v.queue},
              {"mgpu", v.mgpu},
              {"enforcement", v.enforcement},
              {"totals",
               {{"core_allocated_percent", v.core_allocated_percent},
                {"core_capacity_percent", v.core_capacity_percent},
                {"memory_allocated_mib", v.memory_allocated_mib},
                {"memory_capacity_mib", v.memory_capacity_mib},
                {"workers", v.workers}}},
              {"cards", cards}};
}

}  // namespace carve::server::queues
