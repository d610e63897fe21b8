#include "loadgen/body_decoder.h"

#include <gtest/gtest.h>

namespace carve::loadgen {
namespace {

namespace es = aws::eventstream;

std::string PayloadPart(std::string bytes) {
  return es::Encode(es::Message{{{":message-type", "event"},
                                 {":event-type", "PayloadPart"},
                                 {":content-type", "application/octet-stream"}},
                                std::move(bytes)});
}

std::vector<std::string> FeedInPieces(BodyDecoder& d, const std::string& body, size_t piece) {
  std::vector<std::string> out;
  for (size_t i = 0; i < body.size(); i += piece) {
    auto events = d.Feed(std::string_view(body).substr(i, piece));
    EXPECT_TRUE(events.has_value()) << events.error().message;
    if (!events) break;
    for (auto& e : *events) out.push_back(e);
  }
  return out;
}

TEST(EventStreamBodyDecoder, ReadsSseSplitAcrossFramesAndFramesSplitAcrossReads) {
  // One SSE event split over two PayloadPart frames, then a whole one.
  const std::string body = PayloadPart("data: {\"token\":{\"text\":") +
                           PayloadPart("\" a\"}}\n\n") +
                           PayloadPart("data: {\"token\":{\"text\":\" b\"}}\n\n");
  for (size_t piece : {size_t{1}, size_t{7}, body.size()}) {
    EventStreamBodyDecoder d;
    EXPECT_EQ(
        FeedInPieces(d, body, piece),
        (std::vector<std::string>{R"({"token":{"text":" a"}})", R"({"token":{"text":" b"}})"}))
        << "piece " << piece;
  }
}

TEST(EventStreamBodyDecoder, ModelStreamErrorFrameFailsNamingIt) {
  EventStreamBodyDecoder d;
  const std::string frame =
      es::Encode(es::Message{{{":message-type", "exception"},
                              {":exception-type", "ModelStreamError"},
                              {":content-type", "application/json"}},
                             R"({"Message":"copy died","ErrorCode":"ModelError"})"});
  auto r = d.Feed(PayloadPart("data: {\"token\":{\"text\":\" a\"}}\n\n") + frame);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("ModelStreamError"), std::string::npos);
  EXPECT_NE(r.error().message.find("copy died"), std::string::npos);
}

TEST(EventStreamBodyDecoder, CorruptFramingIsAnError) {
  EventStreamBodyDecoder d;
  std::string frame = PayloadPart("data: x\n\n");
  frame[frame.size() - 1] ^= 0x5a;  // break the message CRC
  EXPECT_FALSE(d.Feed(frame).has_value());
}

TEST(SseBodyDecoder, PassesEventsThrough) {
  SseBodyDecoder d;
  EXPECT_EQ(FeedInPieces(d, "data: a\n\ndata: [DONE]\n\n", 3),
            (std::vector<std::string>{"a", "[DONE]"}));
}

}  // namespace
}  // namespace carve::loadgen
