// Timing one streamed request: the client-side clock of TTFT and end-to-end latency, and the
// rules that turn a stream's events and the transport's end into a RequestOutcome. Pure logic:
// the HTTP targets feed it events with their arrival times; tests feed it by hand.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "loadgen/cell_metrics.h"
#include "loadgen/load_scenario.h"
#include "loadgen/sse_parser.h"

namespace carve::loadgen {

class StreamTracker {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  StreamTracker(RequestShape shape, TimePoint start) : shape_(shape), start_(start) {}

  // The first event carrying text sets TTFT; usage and end markers are remembered; the first
  // error event makes the outcome an error.
  void OnEvent(const StreamEvent& e, TimePoint at);
  // A failure outside the stream's events (HTTP status, corrupt framing); the first one wins.
  void Fail(std::string why);
  bool failed() const { return error_.has_value(); }

  struct End {
    TimePoint at;
    std::string transport_error;  // non-empty: the connection failed or was cut
    bool deadline = false;        // the request's timeout cut it: kDeadline
    bool require_done = false;    // the API ends streams with a marker ("[DONE]", TGI final)
  };
  // kDeadline when the deadline cut the stream; kError for an error event, a failure, a
  // transport error, or a stream that ended without its end marker (when required) or without
  // any token. Output tokens: the server's usage when reported, else the text chunks counted.
  RequestOutcome Finish(const End& end) const;

 private:
  RequestShape shape_;
  TimePoint start_;
  std::optional<TimePoint> first_token_;
  int64_t chunks_ = 0;
  std::optional<int64_t> usage_tokens_;
  bool done_ = false;
  std::optional<std::string> error_;
};

}  // namespace carve::loadgen
