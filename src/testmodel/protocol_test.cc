#include "testmodel/protocol.h"

#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>

namespace carve::testmodel {
namespace {

using nlohmann::json;

TEST(Protocol, ParsesSageMakerInputsAndMaxNewTokens) {
  auto r =
      ParseRequest(Api::kSageMaker, R"({"inputs":"12345678","parameters":{"max_new_tokens":7}})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->prompt_tokens, 2);
  EXPECT_EQ(r->max_new_tokens, 7);
  EXPECT_FALSE(r->stream);
}

TEST(Protocol, ChatJoinsMessagesAndReadsMaxTokens) {
  auto r = ParseRequest(
      Api::kChat,
      R"({"messages":[{"role":"user","content":"abcd"},{"role":"user","content":"efgh"}],)"
      R"("max_tokens":3,"stream":true})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->prompt_tokens, 2);
  EXPECT_EQ(r->max_new_tokens, 3);
  EXPECT_TRUE(r->stream);
}

TEST(Protocol, RejectsNonPositiveMaxTokensNamingTheField) {
  auto r = ParseRequest(Api::kCompletions, R"({"prompt":"x","max_tokens":0})");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("max_tokens"), std::string::npos);
}

TEST(Protocol, RejectsBodyThatIsNotJson) {
  EXPECT_FALSE(ParseRequest(Api::kSageMaker, "not json").has_value());
  EXPECT_FALSE(ParseRequest(Api::kSageMaker, R"({"parameters":{}})").has_value());
}

TEST(Protocol, FinalResponseCountsTokens) {
  GenerationRequest req{Api::kCompletions, 5, 3, false, "m"};
  json j = json::parse(FinalResponse(req, 3, {"cmpl-1", 1700000000}));
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  EXPECT_EQ(j["choices"][0]["text"], GeneratedText(3));
}

json Event(const std::string& sse) {
  EXPECT_EQ(sse.rfind("data: ", 0), 0u) << sse;
  EXPECT_EQ(sse.substr(sse.size() - 2), "\n\n") << sse;
  return json::parse(sse.substr(6, sse.size() - 8));
}

// OpenAI's ChatCompletion: id, object, created, model and choices, each choice with index,
// finish_reason, logprobs and a message with role, content and refusal.
TEST(Protocol, AChatAnswerHasEveryMemberOpenAisSchemaRequires) {
  GenerationRequest req{Api::kChat, 5, 3, false, "m"};
  json j = json::parse(FinalResponse(req, 3, {"chatcmpl-x", 1700000000}));
  EXPECT_EQ(j["id"], "chatcmpl-x");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "m");
  const json& choice = j["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_TRUE(choice.contains("logprobs") && choice["logprobs"].is_null());
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], GeneratedText(3));
  EXPECT_TRUE(choice["message"].contains("refusal") && choice["message"]["refusal"].is_null());
}

TEST(Protocol, AStreamNamesTheAssistantFirstAndReportsUsageOnlyWhenAsked) {
  GenerationRequest req{Api::kChat, 5, 2, true, "m"};
  const AnswerId id{"chatcmpl-x", 1700000000};
  json first = Event(StreamChunk(req, 0, false, id));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["created"], 1700000000);
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  json last = Event(StreamChunk(req, 1, true, id));
  EXPECT_FALSE(last["choices"][0]["delta"].contains("role"));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(last.contains("usage"));  // Not asked for.
  EXPECT_EQ(StreamEnd(req, 2, id), "data: [DONE]\n\n");

  auto asked = ParseRequest(Api::kChat, R"({"messages":[{"role":"user","content":"abcd"}],)"
                                        R"("stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_TRUE(asked.has_value()) << asked.error().message;
  ASSERT_TRUE(asked->include_usage);
  json chunk = Event(StreamChunk(*asked, 0, false, id));
  EXPECT_TRUE(chunk.contains("usage") && chunk["usage"].is_null());
  const std::string end = StreamEnd(*asked, 2, id);
  ASSERT_TRUE(end.ends_with("data: [DONE]\n\n")) << end;
  json usage = Event(end.substr(0, end.size() - std::string("data: [DONE]\n\n").size()));
  EXPECT_TRUE(usage["choices"].is_array() && usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 2);
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 1);
  EXPECT_EQ(usage["usage"]["total_tokens"], 3);
}

TEST(Protocol, StreamOptionsOfTheWrongTypeAreRefusedNamingTheField) {
  auto r = ParseRequest(Api::kChat, R"({"messages":[{"role":"user","content":"a"}],)"
                                    R"("stream_options":{"include_usage":"yes"}})");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("stream_options.include_usage"), std::string::npos);
}

TEST(Protocol, AnswerIdsAreShapedAsOpenAisAndDiffer) {
  const AnswerId a = NewAnswerId(Api::kChat, 1);
  const AnswerId b = NewAnswerId(Api::kChat, 1);
  EXPECT_EQ(a.id.rfind("chatcmpl-", 0), 0u) << a.id;
  EXPECT_EQ(a.id.size(), 9u + 29u);
  EXPECT_NE(a.id, b.id);
  EXPECT_EQ(NewAnswerId(Api::kCompletions, 1).id.rfind("cmpl-", 0), 0u);
  for (char c : a.id.substr(9)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << a.id;
}

}  // namespace
}  // namespace carve::testmodel
