// Turning a streamed response body into SSE event data, for the two wire formats `carve bench`
// reads: plain server-sent events (OpenAI-compatible servers) and SageMaker's
// InvokeEndpointWithResponseStream, an AWS event stream whose PayloadPart frames carry the
// model container's SSE bytes (shared/reference/sagemaker-api.md section 2).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aws/event_stream.h"
#include "common/result.h"
#include "loadgen/sse_parser.h"

namespace carve::loadgen {

// Feed the body in pieces as they arrive; each call returns the SSE data completed by these
// bytes. Not thread-safe; one per request.
class BodyDecoder {
 public:
  virtual ~BodyDecoder() = default;
  // An error is a stream failure (corrupt framing, an exception frame); the request failed.
  virtual Result<std::vector<std::string>> Feed(std::string_view bytes) = 0;
  // Data of an event left unterminated when the body ended.
  virtual std::optional<std::string> Finish() = 0;
};

class SseBodyDecoder : public BodyDecoder {
 public:
  Result<std::vector<std::string>> Feed(std::string_view bytes) override;
  std::optional<std::string> Finish() override { return sse_.Finish(); }

 private:
  SseParser sse_;
};

// PayloadPart payloads go through an SSE parser. An `exception` message (ModelStreamError,
// InternalStreamFailure) is Unavailable naming the exception type and its Message; a framing
// error is the event-stream decoder's InvalidArgument; other events are ignored.
class EventStreamBodyDecoder : public BodyDecoder {
 public:
  Result<std::vector<std::string>> Feed(std::string_view bytes) override;
  std::optional<std::string> Finish() override { return sse_.Finish(); }

 private:
  aws::eventstream::Decoder frames_;
  SseParser sse_;
};

}  // namespace carve::loadgen
