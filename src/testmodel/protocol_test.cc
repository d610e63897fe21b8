#include "testmodel/protocol.h"

#include <gtest/gtest.h>

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
  json j = json::parse(FinalResponse(req, 3, "id1"));
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  EXPECT_EQ(j["choices"][0]["text"], GeneratedText(3));
}

TEST(Protocol, LastChatChunkCarriesUsageAndFinishReason) {
  GenerationRequest req{Api::kChat, 5, 2, true, "m"};
  std::string chunk = StreamChunk(req, 1, true, "id");
  ASSERT_EQ(chunk.rfind("data: ", 0), 0u);
  ASSERT_EQ(chunk.substr(chunk.size() - 2), "\n\n");
  json j = json::parse(chunk.substr(6));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(StreamEnd(req), "data: [DONE]\n\n");
}

}  // namespace
}  // namespace carve::testmodel
