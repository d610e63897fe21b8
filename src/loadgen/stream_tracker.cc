#include "loadgen/stream_tracker.h"

#include <fmt/format.h>

namespace carve::loadgen {
namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

void StreamTracker::OnEvent(const StreamEvent& e, TimePoint at) {
  if (e.error) {
    Fail("server reported: " + *e.error);
    return;
  }
  if (e.token) {
    if (!first_token_) first_token_ = at;
    ++chunks_;
  }
  if (e.completion_tokens) usage_tokens_ = e.completion_tokens;
  if (e.done) done_ = true;
}

void StreamTracker::Fail(std::string why) {
  if (!error_) error_ = std::move(why);
}

RequestOutcome StreamTracker::Finish(const End& end) const {
  RequestOutcome o;
  o.input_tokens = shape_.input_tokens;
  o.e2e_s = Seconds(end.at - start_);
  o.ttft_s = first_token_ ? Seconds(*first_token_ - start_) : -1;
  o.output_tokens = usage_tokens_.value_or(chunks_);
  if (end.deadline) {
    o.kind = OutcomeKind::kDeadline;
    o.error = fmt::format("deadline: no complete answer within {:.3f} s ({} of {} tokens)",
                          o.e2e_s, o.output_tokens, shape_.output_tokens);
    return o;
  }
  o.kind = OutcomeKind::kError;
  if (error_) {
    o.error = *error_;
  } else if (!end.transport_error.empty()) {
    o.error = end.transport_error;
  } else if (end.require_done && !done_) {
    o.error = fmt::format("stream ended without its end marker after {} tokens", o.output_tokens);
  } else if (!first_token_) {
    o.error = "stream ended without any generated text";
  } else {
    o.kind = OutcomeKind::kOk;
  }
  return o;
}

}  // namespace carve::loadgen
