#include "loadgen/bench_cost.h"

#include <cmath>

#include <fmt/format.h>

#include "planner/target.h"

namespace carve::loadgen {

Result<BenchPrice> PriceBenchTarget(const CostOptions& o) {
  BenchPrice bp;
  if (o.price_per_hour && (!std::isfinite(*o.price_per_hour) || *o.price_per_hour < 0)) {
    return InvalidArgument(
        fmt::format("--price-per-hour {} must be a finite number >= 0", *o.price_per_hour));
  }
  if (o.instance_type.empty()) {
    if (!o.partition.empty()) {
      return InvalidArgument(fmt::format(
          "--partition {} needs --instance-type to know which GPU it is a partition of",
          o.partition));
    }
    if (o.price_per_hour) {
      bp.price.known = true;
      bp.price.usd_per_hour = *o.price_per_hour;
      bp.price.source = "--price-per-hour";
    } else {
      bp.price.source = "no --instance-type or --price-per-hour given";
    }
    return bp;
  }
  CARVE_ASSIGN_OR_RETURN(const catalog::InstanceType* it, catalog::FindInstanceType(o.instance_type));
  CARVE_ASSIGN_OR_RETURN(const catalog::GpuModel* gpu, catalog::FindGpu(it->gpu_id));
  planner::Target t{gpu, nullptr};
  int gpus = o.gpus == 0 ? 1 : o.gpus;
  if (!o.partition.empty()) {
    if (gpus != 1) {
      return InvalidArgument(fmt::format(
          "--partition {} and --gpus {}: a partition target is one partition of one GPU",
          o.partition, o.gpus));
    }
    CARVE_ASSIGN_OR_RETURN(t.profile, catalog::FindProfile(*gpu, o.partition));
  }
  if (gpus < 1 || gpus > it->gpu_count) {
    return InvalidArgument(fmt::format("--gpus {} must be between 1 and the {} GPUs of {}", gpus,
                                       it->gpu_count, it->id));
  }
  CARVE_ASSIGN_OR_RETURN(bp.price, planner::PriceTarget(t, o.overrides, it->id));
  bp.target = t.Name();
  bp.price.gpu_share = planner::GpuShare(t) * gpus;
  bp.instance_share = bp.price.gpu_share / it->gpu_count;
  bp.price.gpus_per_instance = it->gpu_count;
  bp.price.instance_type = std::string(it->id);
  if (o.price_per_hour) {
    bp.price.known = true;
    bp.price.usd_per_hour = *o.price_per_hour;
    bp.price.source = "--price-per-hour";
  } else if (bp.price.known) {
    bp.price.usd_per_hour = bp.price.instance_usd_per_hour * bp.instance_share;
  }
  return bp;
}

std::optional<double> CostPerMillionOutputTokens(const BenchPrice& price, double output_tok_s) {
  return planner::CostPerMillionTokens(price.price, output_tok_s);
}

}  // namespace carve::loadgen
