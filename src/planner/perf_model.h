// The performance model: how long a target takes to prefill a prompt and to run one decode step,
// from a roofline over the target's share of FLOP/s and memory bandwidth.
//
//   compute time = FLOPs / (peak_flops x compute efficiency)
//   memory time  = bytes read / (bandwidth x bandwidth efficiency)
//   step time    = max(compute time, memory time); the larger one is the binding resource.
//
// Prefill is almost always compute-bound, a decode step bandwidth-bound (it re-reads the weights
// and the KV of the whole batch) until the batch is large enough to reach the ridge point.
// This is the single model shared by `carve plan` and `carve testmodel` (which paces simulated
// tokens with Prefill/DecodeStep). The class is immutable and thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "planner/model_spec.h"
#include "planner/target.h"

namespace carve::planner {

// What limits a step or a cell.
enum class Resource { kCompute, kBandwidth, kKvCapacity };
std::string_view ResourceName(Resource r);

// The fraction of peak a serving engine attains. Defaults and their sources: docs/planner.md.
struct EfficiencyFactors {
  // Attained / peak dense FLOP/s in prefill. Default 0.5: an assumption (typical prefill MFU of
  // dense BF16 GEMMs); no measured figure in shared/reference. Calibrate it.
  double compute = 0.5;
  // Attained / peak memory bandwidth in decode. Default 0.65: measured vLLM Llama-3-8B TPOT on
  // A100-80GB and H100 sits at 63-66% of the weight-read floor (perf-anchors.md 3c).
  double bandwidth = 0.65;
  std::string source = "defaults (uncalibrated)";
};
// InvalidArgument unless both factors are in (0, 1].
Status ValidateFactors(const EfficiencyFactors& f);

// The serving engine's knobs that change the answer. Defaults follow vLLM's.
struct ServingConfig {
  int64_t overhead_bytes = 1'500'000'000;  // Runtime overhead kept out of the KV pool.
  int max_num_seqs = 256;                  // vLLM --max-num-seqs default.
  int64_t max_batched_tokens = 8192;       // Tokens per step (chunked prefill budget).
};

struct StepTime {
  double seconds = 0;
  double compute_seconds = 0;
  double memory_seconds = 0;
  Resource binding = Resource::kBandwidth;
};

// One step of a continuously batched engine: `decode_seqs` sequences each produce one token
// over `decode_context_tokens` context tokens in total, beside prompt chunks being prefilled.
// Build the prefill part with AddPrefillChunk; the sums are what the FLOP and byte counts need.
struct StepLoad {
  int64_t decode_seqs = 0;
  int64_t decode_context_tokens = 0;
  int64_t prefill_tokens = 0;          // Sum of chunk lengths c.
  double prefill_tokens_sq = 0;        // Sum of c^2 (causal attention within the chunk).
  int64_t prefill_cached_tokens = 0;   // Sum of p, the tokens already cached before each chunk.
  double prefill_cross = 0;            // Sum of p x c (attention to the cached tokens).
  int64_t prefill_completions = 0;     // Prompts finishing in this step (run the output head).

  // A chunk of `chunk` prompt tokens on top of `cached` ones; `completes` when it ends a prompt.
  void AddPrefillChunk(int64_t cached, int64_t chunk, bool completes) {
    prefill_tokens += chunk;
    prefill_tokens_sq += static_cast<double>(chunk) * static_cast<double>(chunk);
    prefill_cached_tokens += cached;
    prefill_cross += static_cast<double>(cached) * static_cast<double>(chunk);
    if (completes) ++prefill_completions;
  }
};

class PerfModel {
 public:
  // InvalidArgument for bad factors or an encoder model (not modelled); FailedPrecondition when the weights and overhead do not
  // fit the target's memory (the message gives both sizes).
  static Result<PerfModel> Create(ModelSpec model, Precision precision, Hardware hardware,
                                  EfficiencyFactors factors, ServingConfig serving = {});

  // Time to prefill one prompt of `tokens` tokens alone (the first token comes out of it).
  StepTime Prefill(int64_t tokens) const;
  // Time of one decode step for `batch` sequences holding `context_tokens` tokens in total.
  StepTime DecodeStep(int64_t batch, int64_t context_tokens) const;
  // Time of a mixed step (chunked prefill beside decodes).
  StepTime Step(const StepLoad& load) const;

  // Tokens of KV cache that fit beside weights and overhead.
  int64_t KvCapacityTokens() const { return kv_capacity_tokens_; }

  const ModelSpec& model() const { return model_; }
  const Hardware& hardware() const { return hardware_; }
  const EfficiencyFactors& factors() const { return factors_; }
  const ServingConfig& serving() const { return serving_; }
  Precision precision() const { return precision_; }

 private:
  PerfModel() = default;

  ModelSpec model_;
  Precision precision_;
  Hardware hardware_;
  EfficiencyFactors factors_;
  ServingConfig serving_;
  int64_t weight_bytes_ = 0;
  int64_t kv_bytes_per_token_ = 0;
  int64_t kv_capacity_tokens_ = 0;
};

}  // namespace carve::planner
