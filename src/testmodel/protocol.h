// The testmodel's wire formats: parsing SageMaker /invocations and OpenAI completions / chat
// requests into one GenerationRequest, and building their JSON answers and SSE chunks.
// Pure functions; no I/O. The text is simulated ("tok tok ..."), the token counts are real.
//
// The OpenAI answers follow OpenAI's published schema (openai-node's types for
// ChatCompletion, ChatCompletionChunk and Completion): every required member present (id,
// object, created, model, choices; each choice's index, finish_reason and logprobs; a chat
// message's role, content and refusal), ids shaped as OpenAI's ("chatcmpl-..." and
// "cmpl-..."), the assistant's role in the first chunk's delta, and a stream's usage only when
// the request asks with stream_options.include_usage: then every chunk carries "usage": null
// and one more chunk, with no choices, carries the usage before [DONE].
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
  std::string model;           // echoed back by the OpenAI APIs
  bool include_usage = false;  // OpenAI: stream_options.include_usage
};

// Who an answer is: its id and its creation time (Unix seconds), the same in every chunk.
struct AnswerId {
  std::string id;
  int64_t created = 0;
};

// A fresh answer id for `api`: "chatcmpl-" or "cmpl-" and 29 random letters and digits, as
// OpenAI's; the SageMaker API has none.
AnswerId NewAnswerId(Api api, int64_t created_unix_s);

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
                          const AnswerId& answer);
// One SSE event ("data: {...}\n\n") carrying token `index`; the last one also carries the
// finish reason (and, for the SageMaker API, the usage).
std::string StreamChunk(const GenerationRequest& req, int64_t index, bool last,
                        const AnswerId& answer);
// What follows the last token: for OpenAI, the usage chunk when asked for, then
// "data: [DONE]\n\n"; nothing for SageMaker, whose streams end after the last chunk.
std::string StreamEnd(const GenerationRequest& req, int64_t completion_tokens,
                      const AnswerId& answer);
// An SSE error event for a failure injected mid-stream.
std::string StreamError(std::string_view message);

}  // namespace carve::testmodel
