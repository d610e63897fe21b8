#include "runtime/stream_relay.h"

#include <nlohmann/json.hpp>

#include "common/bounded_json.h"
#include "runtime/runtime_error.h"

namespace carve::runtime {

std::string SseErrorMessage(std::string_view event) {
  // Cheap test first: ordinary token events never mention "error".
  if (event.find("\"error\"") == std::string_view::npos) return "";
  size_t pos = 0;
  while (pos < event.size()) {
    size_t end = event.find('\n', pos);
    if (end == std::string_view::npos) end = event.size();
    std::string_view line = event.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, 5) != "data:") continue;
    line.remove_prefix(5);
    // The copy's container is the tenant's code: its events are parsed bounded, and an error
    // value is quoted as a bounded preview, never dump()ed whole.
    auto parsed = ParseJson(line);
    if (!parsed.has_value()) continue;
    const nlohmann::json& j = *parsed;
    if (!j.is_object() || !j.contains("error")) continue;
    const auto& e = j["error"];
    if (e.is_string()) return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      return e["message"].get<std::string>();
    }
    return JsonPreview(e, 1024, 8);
  }
  return "";
}

std::string StreamRelay::FrameEvent(std::string_view event) {
  std::string message = SseErrorMessage(event);
  if (message.empty()) return PayloadPartFrame(event);
  failed_ = true;
  return ModelStreamErrorFrame(message, "ModelError");
}

std::string StreamRelay::Feed(std::string_view bytes) {
  if (failed_ || bytes.empty()) return "";
  if (!sse_) return PayloadPartFrame(bytes);
  pending_.append(bytes);
  std::string out;
  size_t start = 0;
  while (!failed_) {
    size_t end = pending_.find("\n\n", start);
    if (end == std::string::npos) break;
    out += FrameEvent(std::string_view(pending_).substr(start, end + 2 - start));
    start = end + 2;
  }
  pending_.erase(0, failed_ ? pending_.size() : start);
  return out;
}

std::string StreamRelay::Finish(CopyOutcome outcome, const std::string& detail) {
  if (failed_) return "";
  std::string out;
  if (!pending_.empty()) {
    out += FrameEvent(pending_);
    pending_.clear();
    if (failed_) return out;
  }
  switch (outcome) {
    case CopyOutcome::kOk:
    case CopyOutcome::kAborted:
      return out;
    case CopyOutcome::kTimedOut:
      failed_ = true;
      return out + ModelStreamErrorFrame(
                       "the model sent nothing within the invocation timeout (" + detail + ")",
                       "ModelInvocationTimeExceeded");
    case CopyOutcome::kConnectFailed:
    case CopyOutcome::kBroken:
      break;
  }
  failed_ = true;
  return out + ModelStreamErrorFrame(
                   "the connection to the model closed before the response ended (" + detail + ")",
                   "StreamBroken");
}

}  // namespace carve::runtime
