// The model catalog: architecture rows for well-known models, and lookups over them.
//
// Rows are constexpr data (model_catalog.cc), each citing its source. Lookups are pure and
// thread-safe.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "planner/model_spec.h"

namespace carve::planner {

// A constexpr catalog row; ToSpec turns it into the owning ModelSpec the planner works with.
struct ModelRow {
  std::string_view id;
  std::string_view display_name;
  ModelKind kind = ModelKind::kDecoder;
  int64_t params = 0;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int ffn = 0;
  int64_t vocab = 0;
  int64_t default_context = 0;
  bool tied_embeddings = false;
  std::string_view source;
  std::string_view note;
};

std::span<const ModelRow> AllModelRows();
ModelSpec ToSpec(const ModelRow& row);
std::vector<ModelSpec> AllModels();

// By id ("llama-3.1-8b"), display name, or a Hugging Face name such as
// "meta-llama/Llama-3.1-8B-Instruct" (organisation prefix and "-instruct" are ignored).
// Case-insensitive. NotFound lists the ids that exist.
Result<ModelSpec> FindModel(std::string_view name);

}  // namespace carve::planner
