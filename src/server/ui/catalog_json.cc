#include "server/ui/catalog_json.h"

#include <algorithm>

namespace carve::server::ui {

using nlohmann::json;

namespace {

// A profile's share of its GPU for pricing: max(compute fraction, memory fraction), the rule of
// planner::GpuShare (planner/target.h), which `carve bench` and `carve plan` price with. The
// server may not include the planner (src/DEPENDENCIES), so the one line is repeated here and
// catalog_json_test checks it on every row.
double GpuShare(const catalog::GpuModel& gpu, const catalog::MigProfile& profile) {
  if (gpu.compute_slices == 0 || gpu.memory_slices == 0) return 1;
  return std::max(static_cast<double>(profile.compute_slices) / gpu.compute_slices,
                  static_cast<double>(profile.memory_slices) / gpu.memory_slices);
}

}  // namespace

json CatalogJson(const catalog::PriceOverrides& overrides) {
  json types = json::array();
  for (const catalog::InstanceType& t : catalog::AllInstanceTypes()) {
    types.push_back(json{{"id", t.id},
                         {"gpu", t.gpu_id},
                         {"gpu_count", t.gpu_count},
                         {"vcpus", t.vcpus},
                         {"memory_mib", t.memory_mib},
                         {"usd_per_hour", catalog::PriceUsdPerHour(t, overrides)},
                         {"price_source", overrides.contains(t.id) ? std::string_view("configured")
                                                                   : t.price_source}});
  }
  json gpus = json::array();
  for (const catalog::GpuModel& g : catalog::AllGpus()) {
    json profiles = json::array();
    for (const catalog::MigProfile& p : g.profiles) {
      profiles.push_back(json{{"name", p.name},
                              {"sagemaker_name", catalog::SageMakerName(p)},
                              {"compute_slices", p.compute_slices},
                              {"memory_slices", p.memory_slices},
                              {"memory_mib", p.memory_mib},
                              {"placement_size", p.placement_size},
                              {"starts", std::vector<int>(p.starts.begin(), p.starts.end())},
                              {"max_count", p.max_count},
                              {"gpu_share", GpuShare(g, p)}});
    }
    gpus.push_back(json{{"id", g.id},
                        {"display_name", g.display_name},
                        {"memory_mib", g.memory_mib},
                        {"compute_slices", g.compute_slices},
                        {"memory_slices", g.memory_slices},
                        {"placement_units", g.placement_units},
                        {"profiles", std::move(profiles)}});
  }
  return json{{"instance_types", std::move(types)}, {"gpus", std::move(gpus)}};
}

}  // namespace carve::server::ui
