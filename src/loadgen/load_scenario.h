// Traffic shapes for the load generator: genai-bench's D(in,out) and N(mean_in,sd_in)/
// (mean_out,sd_out), sampled per request, and prompt text sized for a token count.
//
// Parsing reuses the planner's notation (planner/scenario.h), so a bench file's scenario text is
// the same string `carve plan` and `carve plan calibrate` read; this file adds the spread the
// planner ignores and the per-request sampling.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "planner/scenario.h"

namespace carve::loadgen {

struct LoadScenario {
  planner::Scenario shape;  // text ("D(100,100)") and the (mean) token counts
  bool normal = false;      // N(): lengths are drawn per request
  double input_sd = 0;
  double output_sd = 0;
};

// InvalidArgument names the text and the accepted forms (the planner's message).
Result<LoadScenario> ParseLoadScenario(std::string_view text);
// ';'-separated, or ','-separated between ')' and a letter: "D(100,100),N(480,240)/(300,150)".
Result<std::vector<LoadScenario>> ParseLoadScenarios(std::string_view text);

// genai-bench's default chat scenarios (perf-anchors.md 3d).
std::vector<LoadScenario> DefaultScenarios();
// genai-bench's default concurrency ladder: 1, 2, 4, ... 256.
std::vector<int> DefaultConcurrency();

struct RequestShape {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
};

// D(): the fixed counts. N(): round(normal(mean, sd)) for each, at least 1. Deterministic for a
// given engine state.
RequestShape SampleShape(const LoadScenario& s, std::mt19937_64& rng);

// The engine for request `index` of a cell: the same seed gives the same lengths and prompts
// whatever order worker threads take requests in.
std::mt19937_64 RequestRng(uint64_t seed, uint64_t cell, uint64_t index);

// Text of exactly 4 x `tokens` characters, which the testmodel's tokenizer (ceil(chars / 4))
// counts as exactly `tokens`; real tokenizers count about one token per 4-character word. The
// first words are drawn from `rng` so that servers with prefix caching do not reuse a previous
// request's KV cache.
std::string PromptOfTokens(int64_t tokens, std::mt19937_64& rng);

}  // namespace carve::loadgen
