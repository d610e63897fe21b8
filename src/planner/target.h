// Target: what a model is planned onto, either a whole GPU or one MIG partition of it, and the
// share of the GPU's compute, bandwidth and memory that the target holds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/gpu_model.h"
#include "common/result.h"
#include "planner/model_spec.h"

namespace carve::planner {

struct Target {
  const catalog::GpuModel* gpu = nullptr;
  const catalog::MigProfile* profile = nullptr;  // nullptr: the whole GPU, MIG disabled.

  // "h100-80gb:3g.40gb", or "a100-40gb" for a whole GPU.
  std::string Name() const;
  bool whole_gpu() const { return profile == nullptr; }
};

// "gpu" or "gpu:profile"; the profile may use SageMaker's "mig-" spelling. NotFound comes from
// the catalog and lists what exists.
Result<Target> ParseTarget(std::string_view text);
// "a100-40gb,h100-80gb:3g.40gb".
Result<std::vector<Target>> ParseTargets(std::string_view text);

// Every whole GPU and every partition profile on it, for the GPUs given (all when empty).
// Profiles with a media/graphics suffix ("+me", "-me", "+gfx") are skipped: they have the same
// compute and memory as their plain twin.
std::vector<Target> EnumerateTargets(const std::vector<const catalog::GpuModel*>& gpus);

struct Precision {
  Dtype weights = Dtype::kBf16;
  Dtype kv = Dtype::kBf16;
};
// "bf16" (both), "fp8" (both), or "w=fp8,kv=bf16". InvalidArgument names the text.
Result<Precision> ParsePrecision(std::string_view text);
std::string PrecisionName(Precision p);

// The peak resources a target offers at a precision (before efficiency factors).
struct Hardware {
  int sms = 0;                  // SMs of the target.
  bool sms_from_catalog = true;  // False when the profile's SM count is unknown and
                                 // compute_slices / gpu compute_slices was assumed instead.
  double peak_flops = 0;        // FLOP/s: the GPU's dense BF16 (or FP8 when weights are FP8)
                                // figure x sms / gpu sms.
  double bandwidth_bytes_s = 0;  // GPU bandwidth x memory_slices / gpu memory_slices.
  int64_t memory_bytes = 0;     // The profile's (or GPU's) memory as NVML reports it.
  double gpu_share = 1;         // max(compute fraction, memory fraction): H100 3g.40gb = 0.5.
};

// FailedPrecondition when the catalog lacks the GPU's SMs, bandwidth or TFLOP/s (the message
// names the missing figure); InvalidArgument when FP8 is asked of a GPU without FP8.
Result<Hardware> HardwareFor(const Target& t, Precision p);

// Fraction of its GPU a target occupies for pricing: whole GPU 1; a profile
// max(compute_slices / gpu compute_slices, memory_slices / gpu memory_slices).
double GpuShare(const Target& t);

}  // namespace carve::planner
