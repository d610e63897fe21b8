// Model rows. Figures are the published config.json values of each model on Hugging Face
// (num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, head_dim,
// intermediate_size, vocab_size, max_position_embeddings, tie_word_embeddings); parameter
// counts are the model cards' safetensors totals. model_catalog_test.cc checks every row's count
// against EstimateParams so a mistyped figure fails the build.
#include "planner/model_catalog.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include <fmt/format.h>

namespace carve::planner {
namespace {

using enum ModelKind;

constexpr std::array kRows = {
    ModelRow{"llama-3.1-8b", "Llama-3.1-8B", kDecoder, 8'030'261'248, 32, 4096, 32, 8, 128,
             14336, 128256, 131072, false,
             "huggingface.co/meta-llama/Llama-3.1-8B config.json; params per "
             "shared/reference/perf-anchors.md 3b",
             ""},
    ModelRow{"llama-3.1-70b", "Llama-3.1-70B", kDecoder, 70'553'706'496, 80, 8192, 64, 8, 128,
             28672, 128256, 131072, false, "huggingface.co/meta-llama/Llama-3.1-70B config.json",
             "needs more than one 80 GB GPU in BF16"},
    ModelRow{"llama-3.2-1b", "Llama-3.2-1B", kDecoder, 1'235'814'400, 16, 2048, 32, 8, 64, 8192,
             128256, 131072, true, "huggingface.co/meta-llama/Llama-3.2-1B config.json", ""},
    ModelRow{"llama-3.2-3b", "Llama-3.2-3B", kDecoder, 3'212'749'824, 28, 3072, 24, 8, 128, 8192,
             128256, 131072, true, "huggingface.co/meta-llama/Llama-3.2-3B config.json", ""},
    ModelRow{"mistral-7b", "Mistral-7B-v0.3", kDecoder, 7'248'023'552, 32, 4096, 32, 8, 128,
             14336, 32768, 32768, false,
             "huggingface.co/mistralai/Mistral-7B-v0.3 config.json", ""},
    ModelRow{"qwen2.5-7b", "Qwen2.5-7B", kDecoder, 7'615'616'512, 28, 3584, 28, 4, 128, 18944,
             152064, 32768, false, "huggingface.co/Qwen/Qwen2.5-7B config.json",
             "131072 context needs YaRN rope scaling; 32768 is the native window"},
    ModelRow{"qwen2.5-14b", "Qwen2.5-14B", kDecoder, 14'770'033'664, 48, 5120, 40, 8, 128, 13824,
             152064, 32768, false, "huggingface.co/Qwen/Qwen2.5-14B config.json",
             "131072 context needs YaRN rope scaling; 32768 is the native window"},
    ModelRow{"gemma-2-9b", "Gemma-2-9B", kDecoder, 9'241'705'984, 42, 3584, 16, 8, 256, 14336,
             256000, 8192, true, "huggingface.co/google/gemma-2-9b config.json",
             "half the layers use a 4096-token sliding window; the planner sizes KV as if every "
             "layer held the full context (an over-estimate beyond 4096 tokens)"},
    ModelRow{"bge-large-en-v1.5", "bge-large-en-v1.5", kEncoder, 335'141'888, 24, 1024, 16, 16,
             64, 4096, 30522, 512, true, "huggingface.co/BAAI/bge-large-en-v1.5 config.json",
             "embedding model (BERT-large class): one forward pass, no KV cache"},
    ModelRow{"bge-reranker-v2-m3", "bge-reranker-v2-m3", kEncoder, 567'754'752, 24, 1024, 16, 16,
             64, 4096, 250002, 8192, true,
             "huggingface.co/BAAI/bge-reranker-v2-m3 config.json (XLM-RoBERTa-large)",
             "cross-encoder reranker: one forward pass per (query, document), no KV cache"},
};

std::string Normalize(std::string_view name) {
  std::string s(name);
  if (auto slash = s.rfind('/'); slash != std::string::npos) s = s.substr(slash + 1);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view tag : {"-instruct", "-it"}) {
    if (auto at = s.find(tag); at != std::string::npos && at > 0 &&
        (at + tag.size() == s.size() || s[at + tag.size()] == '-')) {
      s.erase(at, tag.size());
    }
  }
  return s;
}

}  // namespace

std::span<const ModelRow> AllModelRows() { return kRows; }

ModelSpec ToSpec(const ModelRow& r) {
  return ModelSpec{std::string(r.id), std::string(r.display_name), r.kind, r.params, r.layers,
                   r.hidden, r.heads, r.kv_heads, r.head_dim, r.ffn, r.vocab, r.default_context,
                   r.tied_embeddings, std::string(r.source), std::string(r.note)};
}

std::vector<ModelSpec> AllModels() {
  std::vector<ModelSpec> out;
  for (const ModelRow& r : kRows) out.push_back(ToSpec(r));
  return out;
}

Result<ModelSpec> FindModel(std::string_view name) {
  std::string wanted = Normalize(name);
  for (const ModelRow& r : kRows) {
    if (wanted == r.id || wanted == Normalize(r.display_name)) return ToSpec(r);
  }
  // "mistral-7b-v0.3" style: the id plus a version suffix.
  for (const ModelRow& r : kRows) {
    if (wanted.starts_with(std::string(r.id) + "-v")) return ToSpec(r);
  }
  std::string ids;
  for (const ModelRow& r : kRows) ids += (ids.empty() ? "" : ", ") + std::string(r.id);
  return NotFound(fmt::format(
      "model '{}' is not in the catalog ({}); describe it with --model-file or the field flags",
      name, ids));
}

}  // namespace carve::planner
