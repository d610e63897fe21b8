// Custom models described in YAML, with the same field names as the catalog rows:
//
//   id: my-model            # required
//   kind: decoder           # decoder (default) | encoder
//   params: 8030261248      # optional when ffn is given: estimated from the architecture
//   layers: 32
//   hidden: 4096
//   heads: 32
//   kv_heads: 8             # default: heads
//   head_dim: 128           # default: hidden / heads
//   ffn: 14336
//   vocab: 128256
//   default_context: 131072
//   tied_embeddings: false
//   base: llama-3.1-8b      # optional: start from a catalog row and override the fields given
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "planner/model_spec.h"

namespace carve::planner {

// InvalidArgument names the field and its bad value, or the YAML parse error; the result has
// passed ValidateModel.
Result<ModelSpec> ParseModelYaml(std::string_view text);
// Reads and parses a file; NotFound when it cannot be read.
Result<ModelSpec> LoadModelFile(const std::string& path);

// Fills the defaults shared by YAML and command-line descriptions (kv_heads, head_dim, params
// from the architecture) and validates.
Result<ModelSpec> CompleteModel(ModelSpec m);

}  // namespace carve::planner
