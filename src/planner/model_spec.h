// ModelSpec: the architecture figures the planner needs for one model, and the sizes derived
// from them (weight bytes, KV bytes per token, FLOPs per token).
//
// Rows for well-known models live in model_catalog.cc; custom models are described by the same
// fields (model_yaml.h). All derived quantities are pure functions of the spec and a precision.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace carve::planner {

enum class ModelKind {
  kDecoder,   // Generative transformer: prefill then one decode step per output token.
  kEncoder,   // Embedding / reranker: one forward pass, no KV cache kept between steps.
};

// Numeric precision of weights or of the KV cache. Bytes per element: BF16 2, FP8 1.
enum class Dtype { kBf16, kFp8 };

std::string_view DtypeName(Dtype d);
// "bf16", "fp16" (same size, treated as bf16) or "fp8". InvalidArgument names the text.
Result<Dtype> ParseDtype(std::string_view text);
int BytesPerElement(Dtype d);

struct ModelSpec {
  std::string id;             // Canonical lower-case id: "llama-3.1-8b".
  std::string display_name;   // "Llama-3.1-8B".
  ModelKind kind = ModelKind::kDecoder;
  int64_t params = 0;         // Total parameters, embeddings included.
  int layers = 0;
  int hidden = 0;
  int heads = 0;              // Attention (query) heads.
  int kv_heads = 0;           // Key/value heads (GQA); equals heads for MHA.
  int head_dim = 0;
  int ffn = 0;                // FFN intermediate size; 0 when unknown (informational only).
  int64_t vocab = 0;
  int64_t default_context = 0;  // Maximum context the model was published with.
  bool tied_embeddings = false;  // Output head shares the input embedding matrix.
  std::string source;         // Where the figures come from.
  std::string note;           // Caveats the planner's numbers inherit (e.g. sliding window).
};

// Checks every field a derivation divides by or multiplies with. InvalidArgument names the field,
// its value and the rule ("kv_heads=0 must be > 0").
Status ValidateModel(const ModelSpec& m);

// Weight bytes at a precision: params x bytes per element. Llama-3.1-8B BF16 = 16,060,522,496.
int64_t WeightBytes(const ModelSpec& m, Dtype weights);

// KV cache bytes for one token: 2 (K and V) x layers x kv_heads x head_dim x bytes per element.
// 0 for encoders. Llama-3.1-8B BF16 = 131,072 (128 KiB).
int64_t KvBytesPerToken(const ModelSpec& m, Dtype kv);

// Parameters estimated from the architecture: embedding table(s) + layers x (attention
// projections + MLP). Decoders use a gated (3-matrix) MLP, encoders a 2-matrix one; norms, biases
// and position tables are ignored (within 2% for every catalog row; the largest gap is the reranker's
// 8194-position table). 0 when ffn is unknown.
int64_t EstimateParams(const ModelSpec& m);

// Parameters multiplied per token in the transformer layers: params minus the embedding table(s).
int64_t LayerParams(const ModelSpec& m);
// Parameters of the output head (vocab x hidden) for decoders, 0 for encoders.
int64_t HeadParams(const ModelSpec& m);

// FLOPs to prefill a prompt of `tokens` tokens (causal attention), producing its first token:
// 2 x LayerParams x tokens + 2 x layers x heads x head_dim x tokens^2 + 2 x HeadParams.
// Encoders use full (non-causal) attention: the attention term doubles and there is no head.
double PrefillFlops(const ModelSpec& m, int64_t tokens);

// FLOPs of one decode step for one sequence whose context holds `context` tokens:
// 2 x (LayerParams + HeadParams) + 4 x layers x heads x head_dim x context.
double DecodeFlops(const ModelSpec& m, int64_t context);

}  // namespace carve::planner
