#include "loadgen/sse_parser.h"

#include <gtest/gtest.h>

namespace carve::loadgen {
namespace {

using Events = std::vector<std::string>;

TEST(SseParser, ReturnsEachEventOnceItsBlankLineArrives) {
  SseParser p;
  EXPECT_EQ(p.Feed("data: {\"a\":1}\n"), Events{});
  EXPECT_EQ(p.Feed("\ndata: [DONE]\n\n"), (Events{"{\"a\":1}", "[DONE]"}));
}

TEST(SseParser, ReassemblesEventsSplitAtEveryByte) {
  const std::string stream = "data: one\r\n\r\n: comment\r\nevent: x\r\ndata: two\r\n\r\ndata:three\r\r";
  SseParser p;
  Events got;
  for (char c : stream) {
    for (auto& e : p.Feed(std::string_view(&c, 1))) got.push_back(e);
  }
  EXPECT_EQ(got, (Events{"one", "two", "three"}));
}

TEST(SseParser, JoinsMultipleDataLines) {
  SseParser p;
  EXPECT_EQ(p.Feed("data: a\ndata: b\n\n"), Events{"a\nb"});
}

TEST(SseParser, FinishReturnsAnUnterminatedEvent) {
  SseParser p;
  EXPECT_EQ(p.Feed("data: [DONE]"), Events{});
  EXPECT_EQ(p.Finish(), std::optional<std::string>("[DONE]"));
  EXPECT_EQ(p.Finish(), std::nullopt);
}

TEST(InterpretEvent, ReadsCompletionsChunksAndUsage) {
  StreamEvent e = InterpretEvent(
      R"({"choices":[{"index":0,"text":" tok","finish_reason":"length"}],)"
      R"("usage":{"prompt_tokens":5,"completion_tokens":7}})");
  EXPECT_TRUE(e.token);
  EXPECT_EQ(e.completion_tokens, 7);
  EXPECT_FALSE(e.done);
}

TEST(InterpretEvent, ReadsChatDeltasAndIgnoresEmptyOnes) {
  EXPECT_TRUE(InterpretEvent(R"({"choices":[{"delta":{"content":"hi"}}]})").token);
  EXPECT_FALSE(InterpretEvent(R"({"choices":[{"delta":{"role":"assistant","content":""}}]})")
                   .token);
  // vLLM's include_usage chunk: no choices, only usage.
  StreamEvent u = InterpretEvent(R"({"choices":[],"usage":{"completion_tokens":3}})");
  EXPECT_FALSE(u.token);
  EXPECT_EQ(u.completion_tokens, 3);
}

TEST(InterpretEvent, ReadsTgiChunksAndTheirFinal) {
  EXPECT_TRUE(InterpretEvent(R"({"token":{"id":0,"text":" a"}})").token);
  StreamEvent last = InterpretEvent(
      R"({"token":{"id":1,"text":" b"},"generated_text":" a b","usage":{"completion_tokens":2}})");
  EXPECT_TRUE(last.token);
  EXPECT_TRUE(last.done);
  EXPECT_EQ(last.completion_tokens, 2);
}

TEST(InterpretEvent, ReadsDoneAndErrors) {
  EXPECT_TRUE(InterpretEvent("[DONE]").done);
  EXPECT_EQ(InterpretEvent(R"({"error":{"message":"boom","type":"server_error"}})").error,
            std::optional<std::string>("boom"));
  EXPECT_TRUE(InterpretEvent("not json").error.has_value());
}

}  // namespace
}  // namespace carve::loadgen
