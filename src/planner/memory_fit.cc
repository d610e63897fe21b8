#include "planner/memory_fit.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace carve::planner {

std::string FormatGb(int64_t bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }

FitResult FitInMemory(const ModelSpec& m, const FitRequest& req, int64_t memory_bytes) {
  FitResult r;
  r.memory_bytes = memory_bytes;
  r.weight_bytes = WeightBytes(m, req.precision.weights);
  r.overhead_bytes = req.overhead_bytes;
  int64_t per_token = KvBytesPerToken(m, req.precision.kv);
  r.kv_bytes = per_token * req.context_tokens * req.concurrency;
  r.headroom_bytes = memory_bytes - (r.weight_bytes + r.kv_bytes + r.overhead_bytes);
  r.fits = r.headroom_bytes >= 0;
  int64_t free_for_kv = memory_bytes - r.weight_bytes - r.overhead_bytes;
  r.weights_fit = free_for_kv >= 0;
  if (!r.weights_fit) return r;
  if (per_token == 0) {
    // Encoders: the context is bounded by the model, concurrency by nothing modelled here.
    r.max_context = m.default_context;
    r.max_concurrency = std::numeric_limits<int32_t>::max();
  } else {
    r.max_context = req.concurrency > 0 ? free_for_kv / (per_token * req.concurrency) : 0;
    r.max_concurrency = req.context_tokens > 0 ? free_for_kv / (per_token * req.context_tokens) : 0;
  }
  if (!r.fits) {
    r.warning = fmt::format(
        "the weights fit ({} + {} overhead) but the KV cache for {} sequences x {} tokens ({}) "
        "does not: a partition sized to the weights alone will load the model and then fail "
        "under load, or quietly serve a much shorter context than you configured (largest "
        "context at concurrency {}: {} tokens; largest concurrency at {} tokens: {})",
        FormatGb(r.weight_bytes), FormatGb(r.overhead_bytes), req.concurrency,
        req.context_tokens, FormatGb(r.kv_bytes), req.concurrency, r.max_context,
        req.context_tokens, r.max_concurrency);
  }
  return r;
}

Result<FitResult> FitOnTarget(const ModelSpec& m, const FitRequest& req, const Target& t) {
  const catalog::GpuModel& g = *t.gpu;
  bool fp8 = req.precision.weights == Dtype::kFp8 || req.precision.kv == Dtype::kFp8;
  if (fp8 && !g.has_fp8()) {
    return InvalidArgument(fmt::format("{} has no FP8 support; precision {} needs FP8", g.id,
                                       PrecisionName(req.precision)));
  }
  int64_t mib = t.profile != nullptr ? t.profile->memory_mib : g.memory_mib;
  return FitInMemory(m, req, mib * 1024 * 1024);
}

}  // namespace carve::planner
