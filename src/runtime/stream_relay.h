// StreamRelay: turns a copy's streamed response body into InvokeEndpointWithResponseStream
// event-stream frames.
//
// Each piece of the body becomes a PayloadPart frame carrying those bytes unchanged. When the
// copy streams server-sent events (Content-Type text/event-stream), the relay cuts at event
// boundaries ("\n\n") so every PayloadPart holds whole events, and an event whose data is a JSON
// object with an "error" member (`data: {"error": {"message": ...}}`) ends the stream with a
// ModelStreamError frame (ErrorCode "ModelError") instead of being relayed. A stream the copy
// breaks off ends with ModelStreamError "StreamBroken"; one that goes silent past the timeout
// with "ModelInvocationTimeExceeded".
// Worked example (SSE): Feed("data: {\"t\":1}\n\ndata: {\"t\"") -> one PayloadPart with the first
// event; Feed(":2}\n\n") -> one PayloadPart with the second.
// Not thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "runtime/copy_call.h"

namespace carve::runtime {

class StreamRelay {
 public:
  explicit StreamRelay(bool server_sent_events) : sse_(server_sent_events) {}

  // Frames to send for these body bytes (possibly ""). After an error event, returns that
  // event's ModelStreamError frame once and then "" for any further input (failed() is true).
  std::string Feed(std::string_view bytes);

  // Frames that end the stream after the copy's body ended with `outcome`: any buffered
  // remainder as a PayloadPart, then a ModelStreamError frame unless the body completed.
  std::string Finish(CopyOutcome outcome, const std::string& detail);

  bool failed() const { return failed_; }

 private:
  std::string FrameEvent(std::string_view event);

  const bool sse_;
  std::string pending_;  // SSE: an incomplete event.
  bool failed_ = false;
};

// The message of an SSE error event (`data: {"error": ...}`), or "" if `event` is not one.
std::string SseErrorMessage(std::string_view event);

}  // namespace carve::runtime
