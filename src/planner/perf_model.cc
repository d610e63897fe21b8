#include "planner/perf_model.h"

#include <algorithm>

#include <fmt/format.h>

#include "planner/memory_fit.h"

namespace carve::planner {

std::string_view ResourceName(Resource r) {
  switch (r) {
    case Resource::kCompute:
      return "compute";
    case Resource::kBandwidth:
      return "bandwidth";
    case Resource::kKvCapacity:
      return "kv_capacity";
  }
  return "unknown";
}

Status ValidateFactors(const EfficiencyFactors& f) {
  for (auto [name, v] : {std::pair{"compute", f.compute}, std::pair{"bandwidth", f.bandwidth}}) {
    if (!(v > 0 && v <= 1)) {
      return InvalidArgument(
          fmt::format("efficiency factor {}={} must be in (0, 1]", name, v));
    }
  }
  return OkStatus();
}

Result<PerfModel> PerfModel::Create(ModelSpec model, Precision precision, Hardware hardware,
                                    EfficiencyFactors factors, ServingConfig serving) {
  CARVE_RETURN_IF_ERROR(ValidateFactors(factors));
  if (model.kind == ModelKind::kEncoder) {
    return InvalidArgument(fmt::format(
        "{} is an encoder (embedding/reranker): the serving model covers generative decoders "
        "only; use `carve plan fit` for its memory",
        model.id));
  }
  if (serving.max_num_seqs <= 0 || serving.max_batched_tokens <= 0) {
    return InvalidArgument(fmt::format(
        "max_num_seqs={} and max_batched_tokens={} must both be > 0", serving.max_num_seqs,
        serving.max_batched_tokens));
  }
  PerfModel p;
  p.weight_bytes_ = WeightBytes(model, precision.weights);
  p.kv_bytes_per_token_ = KvBytesPerToken(model, precision.kv);
  int64_t free_bytes = hardware.memory_bytes - p.weight_bytes_ - serving.overhead_bytes;
  if (free_bytes < 0) {
    return FailedPrecondition(fmt::format(
        "{} weights ({}) + overhead ({}) exceed the target's {} of memory", model.id,
        FormatGb(p.weight_bytes_), FormatGb(serving.overhead_bytes),
        FormatGb(hardware.memory_bytes)));
  }
  // Encoders keep no KV; their capacity is bounded by the batch limits only.
  p.kv_capacity_tokens_ = p.kv_bytes_per_token_ > 0 ? free_bytes / p.kv_bytes_per_token_
                                                    : int64_t{1} << 40;
  p.model_ = std::move(model);
  p.precision_ = precision;
  p.hardware_ = hardware;
  p.factors_ = std::move(factors);
  p.serving_ = serving;
  return p;
}

StepTime PerfModel::Step(const StepLoad& load) const {
  const ModelSpec& m = model_;
  double width = static_cast<double>(m.layers) * m.heads * m.head_dim;
  double n = static_cast<double>(load.prefill_tokens);
  // The i-th token of a chunk of c on top of p cached attends to p + i tokens; QK^T and AV cost
  // 4 x width per (query, key) pair: 4 x width x (p c + c^2 / 2). Encoders attend both ways.
  double causal = m.kind == ModelKind::kEncoder ? 1.0 : 0.5;
  double prefill_flops = 2.0 * static_cast<double>(LayerParams(m)) * n +
                         4.0 * width * (load.prefill_cross + causal * load.prefill_tokens_sq) +
                         2.0 * static_cast<double>(HeadParams(m)) *
                             static_cast<double>(load.prefill_completions);
  double decode_flops = 2.0 * static_cast<double>(LayerParams(m) + HeadParams(m)) *
                            static_cast<double>(load.decode_seqs) +
                        4.0 * width * static_cast<double>(load.decode_context_tokens);
  // Weights are read once per step; KV is read for every cached token a step attends to and
  // written for every new prompt token.
  double kv_tokens = static_cast<double>(load.decode_context_tokens +
                                         load.prefill_cached_tokens + load.prefill_tokens);
  double bytes = static_cast<double>(weight_bytes_) +
                 static_cast<double>(kv_bytes_per_token_) * kv_tokens;
  StepTime s;
  s.compute_seconds =
      (prefill_flops + decode_flops) / (hardware_.peak_flops * factors_.compute);
  s.memory_seconds = bytes / (hardware_.bandwidth_bytes_s * factors_.bandwidth);
  s.binding = s.compute_seconds >= s.memory_seconds ? Resource::kCompute : Resource::kBandwidth;
  s.seconds = std::max(s.compute_seconds, s.memory_seconds);
  return s;
}

StepTime PerfModel::Prefill(int64_t tokens) const {
  StepLoad load;
  load.AddPrefillChunk(0, tokens, true);
  return Step(load);
}

StepTime PerfModel::DecodeStep(int64_t batch, int64_t context_tokens) const {
  StepLoad load;
  load.decode_seqs = batch;
  load.decode_context_tokens = context_tokens;
  return Step(load);
}

}  // namespace carve::planner
