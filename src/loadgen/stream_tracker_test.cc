#include "loadgen/stream_tracker.h"

#include <gtest/gtest.h>

namespace carve::loadgen {
namespace {

using std::chrono::milliseconds;
const StreamTracker::TimePoint kStart{};

StreamEvent Token() { return StreamEvent{true, std::nullopt, false, std::nullopt}; }

TEST(StreamTracker, TimesFirstTokenAndEnd) {
  StreamTracker t({10, 3}, kStart);
  t.OnEvent(StreamEvent{}, kStart + milliseconds(5));  // an empty role chunk: not a token
  t.OnEvent(Token(), kStart + milliseconds(100));
  t.OnEvent(Token(), kStart + milliseconds(120));
  t.OnEvent(Token(), kStart + milliseconds(140));
  t.OnEvent(StreamEvent{false, std::nullopt, true, std::nullopt}, kStart + milliseconds(141));
  RequestOutcome o = t.Finish({kStart + milliseconds(150), "", false, true});
  EXPECT_EQ(o.kind, OutcomeKind::kOk) << o.error;
  EXPECT_DOUBLE_EQ(o.ttft_s, 0.1);
  EXPECT_DOUBLE_EQ(o.e2e_s, 0.15);
  EXPECT_EQ(o.output_tokens, 3);
}

TEST(StreamTracker, PrefersTheServersUsageOverChunksCounted) {
  StreamTracker t({10, 8}, kStart);
  t.OnEvent(Token(), kStart + milliseconds(1));
  t.OnEvent(StreamEvent{true, 8, false, std::nullopt}, kStart + milliseconds(2));
  EXPECT_EQ(t.Finish({kStart + milliseconds(3), "", false, false}).output_tokens, 8);
}

TEST(StreamTracker, MissingEndMarkerIsAnErrorWhenRequired) {
  StreamTracker t({10, 8}, kStart);
  t.OnEvent(Token(), kStart + milliseconds(1));
  RequestOutcome o = t.Finish({kStart + milliseconds(3), "", false, true});
  EXPECT_EQ(o.kind, OutcomeKind::kError);
  EXPECT_NE(o.error.find("end marker"), std::string::npos);
}

TEST(StreamTracker, ErrorEventWinsOverEverythingButTheDeadline) {
  StreamTracker t({10, 8}, kStart);
  t.OnEvent(Token(), kStart + milliseconds(1));
  t.OnEvent(StreamEvent{false, std::nullopt, false, "boom"}, kStart + milliseconds(2));
  EXPECT_TRUE(t.failed());
  RequestOutcome o = t.Finish({kStart + milliseconds(3), "connection cut", false, true});
  EXPECT_EQ(o.kind, OutcomeKind::kError);
  EXPECT_NE(o.error.find("boom"), std::string::npos);
}

TEST(StreamTracker, DeadlineIsItsOwnKind) {
  StreamTracker t({10, 8}, kStart);
  t.OnEvent(Token(), kStart + milliseconds(1));
  RequestOutcome o = t.Finish({kStart + milliseconds(900), "", true, true});
  EXPECT_EQ(o.kind, OutcomeKind::kDeadline);
  EXPECT_NE(o.error.find("1 of 8 tokens"), std::string::npos) << o.error;
}

TEST(StreamTracker, TransportFailureIsAnError) {
  StreamTracker t({10, 8}, kStart);
  RequestOutcome o = t.Finish({kStart + milliseconds(2), "Connection", false, true});
  EXPECT_EQ(o.kind, OutcomeKind::kError);
  EXPECT_EQ(o.error, "Connection");
  EXPECT_LT(o.ttft_s, 0);
}

}  // namespace
}  // namespace carve::loadgen
