#include "runtime/stream_relay.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "aws/event_stream.h"
#include "common/bounded_json.h"

namespace carve::runtime {
namespace {

namespace es = carve::aws::eventstream;

std::vector<es::Message> Decode(const std::string& wire) {
  es::Decoder d;
  auto got = d.Feed(wire);
  EXPECT_TRUE(got.has_value());
  return got.has_value() ? *got : std::vector<es::Message>{};
}

TEST(StreamRelay, CutsSseAtEventBoundariesAcrossChunks) {
  StreamRelay relay(/*server_sent_events=*/true);
  auto first = Decode(relay.Feed("data: {\"t\":1}\n\ndata: {\"t\""));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].payload, "data: {\"t\":1}\n\n");
  auto second = Decode(relay.Feed(":2}\n\n"));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].payload, "data: {\"t\":2}\n\n");
  EXPECT_EQ(relay.Finish(CopyOutcome::kOk, ""), "");
}

TEST(StreamRelay, RelaysNonSseBytesAsTheyCome) {
  StreamRelay relay(false);
  auto msgs = Decode(relay.Feed("abc"));
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].payload, "abc");
}

TEST(StreamRelay, FlushesAnUnterminatedLastEventOnCompletion) {
  StreamRelay relay(true);
  EXPECT_EQ(relay.Feed("data: tail"), "");
  auto msgs = Decode(relay.Finish(CopyOutcome::kOk, ""));
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].payload, "data: tail");
}

TEST(StreamRelay, AnErrorEventEndsTheRelayWithModelStreamError) {
  StreamRelay relay(true);
  auto msgs = Decode(relay.Feed(
      "data: {\"t\":1}\n\ndata: {\"error\":{\"message\":\"oom\"}}\n\ndata: {\"t\":2}\n\n"));
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[1].headers[0].value, "ModelStreamError");
  EXPECT_EQ(nlohmann::json::parse(msgs[1].payload)["Message"], "oom");
  EXPECT_TRUE(relay.failed());
  EXPECT_EQ(relay.Feed("data: {\"t\":3}\n\n"), "");
  EXPECT_EQ(relay.Finish(CopyOutcome::kBroken, "x"), "");
}

TEST(StreamRelay, ABrokenOrSilentCopyEndsWithTheMatchingErrorCode) {
  StreamRelay broken(true);
  auto a = Decode(broken.Finish(CopyOutcome::kBroken, "Read"));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(a[0].payload)["ErrorCode"], "StreamBroken");
  StreamRelay silent(true);
  auto b = Decode(silent.Finish(CopyOutcome::kTimedOut, "Read"));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(b[0].payload)["ErrorCode"], "ModelInvocationTimeExceeded");
}

TEST(StreamRelay, OnlyJsonErrorMembersCountAsErrorEvents) {
  EXPECT_EQ(SseErrorMessage("data: {\"error\":\"bad\"}\n\n"), "bad");
  EXPECT_EQ(SseErrorMessage("data: {\"text\":\"the word \\\"error\\\"\"}\n\n"), "");
  EXPECT_EQ(SseErrorMessage("data: \"error\" not json\n\n"), "");
}

// The copy's container is the tenant's code: an error event nested 100,000 deep was dump()ed
// recursively (issue 35). It is refused by the bounded parser and relayed as data; an error
// value within the limit is quoted as a bounded preview.
TEST(StreamRelay, DeepOrHugeErrorEventsDoNotCrashTheRelay) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(SseErrorMessage("data: {\"error\":" + deep + "}\n\n"), "");
  const std::string nested = std::string(30, '[') + std::string(30, ']');
  const std::string shown = SseErrorMessage("data: {\"error\":" + nested + "}\n\n");
  EXPECT_TRUE(shown.starts_with("[[[[")) << shown;
  EXPECT_NE(shown.find("[...]"), std::string::npos) << shown;
  EXPECT_LT(SseErrorMessage("data: {\"error\":[\"" + std::string(1 << 20, 'e') + "\"]}\n\n").size(),
            1100u);
}

// An error value that is neither a string nor {"message": ...} is quoted as its first 1024 bytes
// of compact JSON, cut as TextPreview cuts (docs/design.md, the router's streaming).
TEST(StreamRelay, AnOddErrorValueIsQuotedAsItsFirstKibibyte) {
  const std::string value = "[\"" + std::string(5000, 'e') + "\"]";
  EXPECT_EQ(SseErrorMessage("data: {\"error\":" + value + "}\n\n"), TextPreview(value, 1024));
  EXPECT_EQ(SseErrorMessage("data: {\"error\":[1,2]}\n\n"), "[1,2]");  // short: whole
}

}  // namespace
}  // namespace carve::runtime
