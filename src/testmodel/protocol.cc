#include "testmodel/protocol.h"

#include <array>
#include <nlohmann/json.hpp>
#include <random>

namespace carve::testmodel {
namespace {

using nlohmann::json;

Result<int64_t> PositiveInt(const json& obj, const char* field, int64_t fallback) {
  if (!obj.contains(field) || obj[field].is_null()) return fallback;
  if (!obj[field].is_number_integer() || obj[field].get<int64_t>() < 1) {
    return InvalidArgument(std::string("field \"") + field + "\" is " + obj[field].dump() +
                           "; it must be an integer >= 1");
  }
  return obj[field].get<int64_t>();
}

// A prompt may be a string or a list of strings (OpenAI and TGI both allow a list).
Result<std::string> PromptText(const json& v, const char* field) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string all;
    for (const auto& part : v) {
      if (!part.is_string()) break;
      all += part.get<std::string>();
    }
    return all;
  }
  return InvalidArgument(std::string("field \"") + field + "\" must be a string or a list of " +
                         "strings; got " + std::string(v.type_name()));
}

json Usage(int64_t prompt, int64_t completion) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion}};
}

}  // namespace

int64_t CountPromptTokens(std::string_view text) {
  return std::max<int64_t>(1, (static_cast<int64_t>(text.size()) + 3) / 4);
}

Result<GenerationRequest> ParseRequest(Api api, std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("request body must be a JSON object");
  }
  GenerationRequest req;
  req.api = api;
  req.model = j.value("model", std::string("carve-testmodel"));
  if (j.contains("stream")) {
    if (!j["stream"].is_boolean()) return InvalidArgument("field \"stream\" must be a boolean");
    req.stream = j["stream"].get<bool>();
  }
  if (api != Api::kSageMaker && j.contains("stream_options") && !j["stream_options"].is_null()) {
    const json& options = j["stream_options"];
    if (!options.is_object()) return InvalidArgument("field \"stream_options\" must be an object");
    if (options.contains("include_usage")) {
      if (!options["include_usage"].is_boolean()) {
        return InvalidArgument("field \"stream_options.include_usage\" must be a boolean");
      }
      req.include_usage = options["include_usage"].get<bool>();
    }
  }
  std::string prompt;
  switch (api) {
    case Api::kSageMaker: {
      const char* field = j.contains("inputs") ? "inputs" : "prompt";
      if (!j.contains(field)) return InvalidArgument("field \"inputs\" (or \"prompt\") is missing");
      CARVE_ASSIGN_OR_RETURN(prompt, PromptText(j[field], field));
      json params = j.value("parameters", json::object());
      if (!params.is_object()) return InvalidArgument("field \"parameters\" must be an object");
      CARVE_ASSIGN_OR_RETURN(req.max_new_tokens, PositiveInt(params, "max_new_tokens", 16));
      break;
    }
    case Api::kCompletions: {
      if (!j.contains("prompt")) return InvalidArgument("field \"prompt\" is missing");
      CARVE_ASSIGN_OR_RETURN(prompt, PromptText(j["prompt"], "prompt"));
      CARVE_ASSIGN_OR_RETURN(req.max_new_tokens, PositiveInt(j, "max_tokens", 16));
      break;
    }
    case Api::kChat: {
      if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty()) {
        return InvalidArgument("field \"messages\" must be a non-empty list");
      }
      for (const auto& m : j["messages"]) {
        if (!m.is_object() || !m.contains("content") || !m["content"].is_string()) {
          return InvalidArgument("each message needs a string \"content\"");
        }
        prompt += m["content"].get<std::string>();
      }
      const char* field =
          j.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
      CARVE_ASSIGN_OR_RETURN(req.max_new_tokens, PositiveInt(j, field, 16));
      break;
    }
  }
  req.prompt_tokens = CountPromptTokens(prompt);
  return req;
}

std::string TokenText(int64_t index) {
  static constexpr std::array<const char*, 8> kWords = {" simulated", " token", " from", " carve",
                                                        " testmodel", " paced", " by",   " model"};
  return kWords[static_cast<size_t>(index) % kWords.size()];
}

std::string GeneratedText(int64_t tokens) {
  std::string s;
  for (int64_t i = 0; i < tokens; ++i) s += TokenText(i);
  return s;
}

AnswerId NewAnswerId(Api api, int64_t created_unix_s) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 random{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  std::string id = api == Api::kChat ? "chatcmpl-" : api == Api::kCompletions ? "cmpl-" : "";
  if (api != Api::kSageMaker) {
    for (int i = 0; i < 29; ++i) id += kAlphabet[pick(random)];
  }
  return {std::move(id), created_unix_s};
}

std::string FinalResponse(const GenerationRequest& req, int64_t completion_tokens,
                          const AnswerId& answer) {
  const std::string text = GeneratedText(completion_tokens);
  json usage = Usage(req.prompt_tokens, completion_tokens);
  switch (req.api) {
    case Api::kSageMaker:
      return json{{"generated_text", text}, {"usage", usage}}.dump();
    case Api::kCompletions:
      return json{{"id", answer.id},
                  {"object", "text_completion"},
                  {"created", answer.created},
                  {"model", req.model},
                  {"choices",
                   {{{"index", 0},
                     {"text", text},
                     {"logprobs", nullptr},
                     {"finish_reason", "length"}}}},
                  {"usage", usage}}
          .dump();
    case Api::kChat:
      return json{{"id", answer.id},
                  {"object", "chat.completion"},
                  {"created", answer.created},
                  {"model", req.model},
                  {"choices",
                   {{{"index", 0},
                     {"message",
                      {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}}},
                     {"logprobs", nullptr},
                     {"finish_reason", "length"}}}},
                  {"usage", usage}}
          .dump();
  }
  return {};
}

std::string StreamChunk(const GenerationRequest& req, int64_t index, bool last,
                        const AnswerId& answer) {
  const std::string text = TokenText(index);
  const json finish = last ? json("length") : json();
  json j;
  switch (req.api) {
    case Api::kSageMaker:  // TGI's shape, which SageMaker LLM containers stream
      j = {{"token", {{"id", index}, {"text", text}}}};
      if (last) {
        j["generated_text"] = GeneratedText(index + 1);
        j["usage"] = Usage(req.prompt_tokens, index + 1);
      }
      break;
    case Api::kCompletions:
      j = {{"id", answer.id},
           {"object", "text_completion"},
           {"created", answer.created},
           {"model", req.model},
           {"choices",
            {{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish}}}}};
      break;
    case Api::kChat: {
      json delta = {{"content", text}};
      if (index == 0) delta["role"] = "assistant";  // The first delta says who speaks.
      j = {{"id", answer.id},
           {"object", "chat.completion.chunk"},
           {"created", answer.created},
           {"model", req.model},
           {"choices",
            {{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish}}}}};
      break;
    }
  }
  if (req.api != Api::kSageMaker && req.include_usage) j["usage"] = nullptr;
  return "data: " + j.dump() + "\n\n";
}

std::string StreamEnd(const GenerationRequest& req, int64_t completion_tokens,
                      const AnswerId& answer) {
  if (req.api == Api::kSageMaker) return {};
  std::string out;
  if (req.include_usage) {
    const json usage = {{"id", answer.id},
                        {"object", req.api == Api::kChat ? "chat.completion.chunk"
                                                         : "text_completion"},
                        {"created", answer.created},
                        {"model", req.model},
                        {"choices", json::array()},
                        {"usage", Usage(req.prompt_tokens, completion_tokens)}};
    out = "data: " + usage.dump() + "\n\n";
  }
  return out + "data: [DONE]\n\n";
}

std::string StreamError(std::string_view message) {
  return "data: " + json{{"error", {{"message", message}, {"type", "server_error"}}}}.dump() +
         "\n\n";
}

}  // namespace carve::testmodel
