// What a bench target costs: the share of an instance it holds and its hourly price, so a
// cell's output tok/s becomes $ per million output tokens (planner/cost.h's arithmetic):
//
//   share of the instance = share of one GPU / GPUs on the instance
//       a partition's share of a GPU is max(compute fraction, memory fraction) (planner GpuShare):
//       mig-3g.40gb on an H100 is 0.5 of a GPU, so 0.5 / 8 = 1/16 of an ml.p5.48xlarge;
//       a whole-GPU target holding N GPUs has N / GPUs on the instance.
//   target $/h = instance $/h x share of the instance (or --price-per-hour, used as is)
//   $/M output tokens = target $/h / (output tok/s x 3600) x 1e6
#pragma once

#include <optional>
#include <string>

#include "catalog/catalog.h"
#include "common/result.h"
#include "planner/cost.h"

namespace carve::loadgen {

struct CostOptions {
  std::string instance_type;  // "ml.p5.48xlarge"; empty: no catalog price
  std::string partition;      // "mig-3g.40gb" or "3g.40gb"; empty: whole GPUs
  int gpus = 0;               // whole GPUs the target holds; 0 means 1 (ignored with a partition)
  std::optional<double> price_per_hour;  // the target's own $/h, overriding the catalog
  catalog::PriceOverrides overrides;     // configured instance prices
};

struct BenchPrice {
  planner::TargetPrice price;  // known = false: unpriced (costs left empty)
  double instance_share = 0;   // 0 when no instance type was named
  std::string target;          // planner spelling: "h100-80gb:3g.40gb", "a100-40gb", or ""
};

// NotFound for an unknown instance type or a partition the instance's GPU lacks (the catalog's
// message lists what exists); InvalidArgument for a partition without an instance type, GPUs
// outside [1, GPUs on the instance], a partition together with --gpus > 1, or a negative price.
Result<BenchPrice> PriceBenchTarget(const CostOptions& options);

// nullopt when unpriced or the throughput is zero.
std::optional<double> CostPerMillionOutputTokens(const BenchPrice& price, double output_tok_s);

}  // namespace carve::loadgen
