#include "planner/cost.h"

#include <algorithm>

#include <fmt/format.h>

namespace carve::planner {

Result<TargetPrice> PriceTarget(const Target& t, const catalog::PriceOverrides& overrides,
                                std::string_view instance_types) {
  TargetPrice p;
  p.gpu_share = GpuShare(t);
  const catalog::InstanceType* best = nullptr;
  double best_per_gpu = 0;
  size_t pos = 0;
  while (pos < instance_types.size() && best == nullptr) {
    size_t comma = std::min(instance_types.find(',', pos), instance_types.size());
    std::string_view name = instance_types.substr(pos, comma - pos);
    pos = comma + 1;
    if (name.empty()) continue;
    CARVE_ASSIGN_OR_RETURN(const catalog::InstanceType* it, catalog::FindInstanceType(name));
    if (it->gpu_id != t.gpu->id || it->gpu_count <= 0) continue;
    best = it;
    best_per_gpu = catalog::PriceUsdPerHour(*it, overrides) / it->gpu_count;
  }
  if (best == nullptr) {
    for (const catalog::InstanceType& it : catalog::AllInstanceTypes()) {
      if (it.gpu_id != t.gpu->id || it.gpu_count <= 0) continue;
      double per_gpu = catalog::PriceUsdPerHour(it, overrides) / it.gpu_count;
      if (per_gpu <= 0) continue;
      if (best == nullptr || it.gpu_count > best->gpu_count ||
          (it.gpu_count == best->gpu_count && per_gpu < best_per_gpu)) {
        best = &it;
        best_per_gpu = per_gpu;
      }
    }
  }
  if (best == nullptr || best_per_gpu <= 0) {
    p.source = fmt::format(
        "no priced instance type carries {}; configure one (--price TYPE=USD_PER_HOUR)",
        t.gpu->id);
    if (best != nullptr) p.instance_type = std::string(best->id);
    return p;
  }
  p.known = true;
  p.instance_type = std::string(best->id);
  p.gpus_per_instance = best->gpu_count;
  p.instance_usd_per_hour = best_per_gpu * best->gpu_count;
  p.usd_per_hour = best_per_gpu * p.gpu_share;
  p.source = overrides.contains(best->id) ? "configured" : std::string(best->price_source);
  return p;
}

std::optional<double> CostPerMillionTokens(const TargetPrice& price, double output_tok_s) {
  if (!price.known || output_tok_s <= 0) return std::nullopt;
  return price.usd_per_hour / (output_tok_s * 3600.0) * 1e6;
}

}  // namespace carve::planner
