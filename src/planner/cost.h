// Cost: what a target costs per hour and per million output tokens.
//
//   target $/h = instance $/h / GPUs per instance x the target's share of its GPU
//   $/M output tokens = target $/h / (output tok/s x 3600) x 1e6
//
// A partition's share is max(compute fraction, memory fraction) (target.h GpuShare): an H100
// 3g.40gb is half a GPU, so on an ml.p5.48xlarge it is 1/16 of the instance, as in seed 001.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "catalog/catalog.h"
#include "planner/target.h"

namespace carve::planner {

struct TargetPrice {
  bool known = false;              // False when no instance carrying the GPU has a price.
  double usd_per_hour = 0;         // For the target (its share of one GPU).
  double gpu_share = 1;
  std::string instance_type;       // The instance type the price comes from.
  double instance_usd_per_hour = 0;
  int gpus_per_instance = 0;
  std::string source;              // The catalog's price_source, or "configured".
};

// Prices a target from the instance types that carry its GPU. `instance_types` (comma-separated)
// names preferred types; the first that carries the target's GPU is used (NotFound for a name the
// catalog lacks). Otherwise: the priced type with the most GPUs (seed 001 prices a unit as the
// whole-instance price divided by the units on it: 8 on a p4d, 16 halves on a p5), ties to the
// lower price per GPU. Configured prices (overrides) win over the catalog's. An unknown price is
// a value (known = false, source says why), not an error.
Result<TargetPrice> PriceTarget(const Target& t, const catalog::PriceOverrides& overrides,
                                std::string_view instance_types = {});

// nullopt when the price is unknown or the throughput is zero.
std::optional<double> CostPerMillionTokens(const TargetPrice& price, double output_tok_s);

}  // namespace carve::planner
