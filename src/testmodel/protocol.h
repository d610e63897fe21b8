// The testmodel's wire formats: parsing SageMaker /invocations and OpenAI completions / chat
// requests into one GenerationRequest, and building their JSON answers and SSE chunks.
// Pure functions; no I/O. The text is simulated ("tok tok ..."), the token counts are real.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace carve::testmodel {

enum class Api { kSageMaker, kCompletions, kChat };

struct GenerationRequest {
  Api api = Api::kSageMaker;
  int64_t prompt_tokens = 0;
  int64_t max_new_tokens = 0;
  bool stream = false;
  std::string model;  // echoed back by the OpenAI APIs
};

// Simulated tokenizer: ~4 characters per token, at least 1 (the usual English rule of thumb).
int64_t CountPromptTokens(std::string_view text);

// SageMaker: {"inputs"|"prompt": "..." , "parameters": {"max_new_tokens": N}, "stream": bool}.
// OpenAI: {"prompt": ..., "max_tokens": N, "stream": bool} and
//         {"messages": [{"role","content"}], "max_tokens"|"max_completion_tokens": N, ...}.
// InvalidArgument names the missing or mistyped field. Defaults: 16 new tokens.
Result<GenerationRequest> ParseRequest(Api api, std::string_view body);

// The text of simulated token `index` (0-based), each with a leading space.
std::string TokenText(int64_t index);
std::string GeneratedText(int64_t tokens);

// The complete (non-streamed) answer for `completion_tokens` tokens.
std::string FinalResponse(const GenerationRequest& req, int64_t completion_tokens,
                          std::string_view id);
// One SSE event ("data: {...}\n\n") carrying token `index`; the last one also carries the usage.
std::string StreamChunk(const GenerationRequest& req, int64_t index, bool last,
                        std::string_view id);
// "data: [DONE]\n\n" for OpenAI; SageMaker streams end after the last chunk.
std::string StreamEnd(const GenerationRequest& req);
// An SSE error event for a failure injected mid-stream.
std::string StreamError(std::string_view message);

}  // namespace carve::testmodel
