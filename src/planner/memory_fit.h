// Memory fit: does a model, at a context length and a number of concurrent sequences, fit in a
// target's memory? Memory holds three things (seed 001, "choosing a layout"): the weights, the
// KV cache (bytes per token x context x concurrent sequences) and 1-2 GB of runtime overhead.
#pragma once

#include <cstdint>
#include <string>

#include "planner/model_spec.h"
#include "planner/target.h"

namespace carve::planner {

// Default runtime overhead (CUDA context + serving process): the middle of the seed's "1-2 GB".
inline constexpr int64_t kDefaultOverheadBytes = 1'500'000'000;

struct FitRequest {
  Precision precision;
  int64_t context_tokens = 0;  // Tokens held per sequence (prompt + output).
  int concurrency = 1;         // Concurrent sequences whose KV must be resident.
  int64_t overhead_bytes = kDefaultOverheadBytes;
};

struct FitResult {
  int64_t memory_bytes = 0;
  int64_t weight_bytes = 0;
  int64_t kv_bytes = 0;          // KvBytesPerToken x context x concurrency.
  int64_t overhead_bytes = 0;
  int64_t headroom_bytes = 0;    // memory - (weights + kv + overhead); negative when it fails.
  bool fits = false;
  bool weights_fit = false;      // weights + overhead fit (the model loads).
  int64_t max_context = 0;       // Largest context at the requested concurrency (0: none).
  int64_t max_concurrency = 0;   // Largest concurrency at the requested context (0: none).
  std::string warning;           // The seed's warning when weights fit and the KV does not.
};

// Pure arithmetic on a memory size; the Target overload below reads it from the catalog.
// Encoders keep no KV cache, so only weights and overhead count for them.
FitResult FitInMemory(const ModelSpec& m, const FitRequest& req, int64_t memory_bytes);

// As above, for a target. InvalidArgument when the precision needs FP8 the GPU lacks.
Result<FitResult> FitOnTarget(const ModelSpec& m, const FitRequest& req, const Target& t);

// Bytes in decimal GB with two decimals ("16.06 GB"), as the seed writes sizes.
std::string FormatGb(int64_t bytes);

}  // namespace carve::planner
