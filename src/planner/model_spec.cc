#include "planner/model_spec.h"

#include <fmt/format.h>

namespace carve::planner {

std::string_view DtypeName(Dtype d) { return d == Dtype::kFp8 ? "fp8" : "bf16"; }

Result<Dtype> ParseDtype(std::string_view text) {
  if (text == "bf16" || text == "fp16" || text == "BF16" || text == "FP16") return Dtype::kBf16;
  if (text == "fp8" || text == "FP8") return Dtype::kFp8;
  return InvalidArgument(fmt::format("dtype '{}' is not one of bf16, fp16, fp8", text));
}

int BytesPerElement(Dtype d) { return d == Dtype::kFp8 ? 1 : 2; }

namespace {

Status Positive(std::string_view model, std::string_view field, int64_t value) {
  if (value > 0) return OkStatus();
  return InvalidArgument(
      fmt::format("model '{}': {}={} must be > 0", model, field, value));
}

}  // namespace

Status ValidateModel(const ModelSpec& m) {
  CARVE_RETURN_IF_ERROR(Positive(m.id, "params", m.params));
  CARVE_RETURN_IF_ERROR(Positive(m.id, "layers", m.layers));
  CARVE_RETURN_IF_ERROR(Positive(m.id, "hidden", m.hidden));
  CARVE_RETURN_IF_ERROR(Positive(m.id, "heads", m.heads));
  CARVE_RETURN_IF_ERROR(Positive(m.id, "kv_heads", m.kv_heads));
  CARVE_RETURN_IF_ERROR(Positive(m.id, "head_dim", m.head_dim));
  CARVE_RETURN_IF_ERROR(Positive(m.id, "vocab", m.vocab));
  CARVE_RETURN_IF_ERROR(Positive(m.id, "default_context", m.default_context));
  if (m.ffn < 0) {
    return InvalidArgument(fmt::format("model '{}': ffn={} must be >= 0", m.id, m.ffn));
  }
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
    return InvalidArgument(fmt::format(
        "model '{}': kv_heads={} must divide heads={} (grouped-query attention)", m.id,
        m.kv_heads, m.heads));
  }
  int64_t embeddings = m.vocab * m.hidden * (m.tied_embeddings ? 1 : 2);
  if (embeddings >= m.params) {
    return InvalidArgument(fmt::format(
        "model '{}': params={} must exceed the embedding table(s) vocab x hidden{} = {}", m.id,
        m.params, m.tied_embeddings ? "" : " x 2 (untied)", embeddings));
  }
  return OkStatus();
}

int64_t WeightBytes(const ModelSpec& m, Dtype weights) {
  return m.params * BytesPerElement(weights);
}

int64_t KvBytesPerToken(const ModelSpec& m, Dtype kv) {
  if (m.kind == ModelKind::kEncoder) return 0;
  return int64_t{2} * m.layers * m.kv_heads * m.head_dim * BytesPerElement(kv);
}

int64_t EstimateParams(const ModelSpec& m) {
  if (m.ffn <= 0) return 0;
  int64_t h = m.hidden;
  int64_t attention = 2 * h * m.heads * m.head_dim + 2 * h * m.kv_heads * m.head_dim;
  int64_t mlp = (m.kind == ModelKind::kEncoder ? 2 : 3) * h * m.ffn;
  int64_t tables = m.vocab * h * (m.tied_embeddings || m.kind == ModelKind::kEncoder ? 1 : 2);
  return tables + m.layers * (attention + mlp);
}

int64_t LayerParams(const ModelSpec& m) {
  int64_t embeddings = m.vocab * m.hidden * (m.tied_embeddings ? 1 : 2);
  if (m.kind == ModelKind::kEncoder) embeddings = m.vocab * m.hidden;
  return m.params - embeddings;
}

int64_t HeadParams(const ModelSpec& m) {
  return m.kind == ModelKind::kEncoder ? 0 : m.vocab * m.hidden;
}

double PrefillFlops(const ModelSpec& m, int64_t tokens) {
  double t = static_cast<double>(tokens);
  double attn_width = static_cast<double>(m.layers) * m.heads * m.head_dim;
  // Causal attention: QK^T and AV each cost 2 x width x t^2 / 2 (half the matrix is masked).
  double attention = (m.kind == ModelKind::kEncoder ? 4.0 : 2.0) * attn_width * t * t;
  return 2.0 * static_cast<double>(LayerParams(m)) * t + attention +
         2.0 * static_cast<double>(HeadParams(m));
}

double DecodeFlops(const ModelSpec& m, int64_t context) {
  double attn_width = static_cast<double>(m.layers) * m.heads * m.head_dim;
  return 2.0 * static_cast<double>(LayerParams(m) + HeadParams(m)) +
         4.0 * attn_width * static_cast<double>(context);
}

}  // namespace carve::planner
