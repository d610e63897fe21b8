#include "loadgen/body_decoder.h"

#include <nlohmann/json.hpp>

namespace carve::loadgen {
namespace {

std::string HeaderValue(const aws::eventstream::Message& m, std::string_view name) {
  for (const auto& h : m.headers) {
    if (h.name == name) return h.value;
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> SseBodyDecoder::Feed(std::string_view bytes) {
  return sse_.Feed(bytes);
}

Result<std::vector<std::string>> EventStreamBodyDecoder::Feed(std::string_view bytes) {
  CARVE_ASSIGN_OR_RETURN(std::vector<aws::eventstream::Message> messages, frames_.Feed(bytes));
  std::vector<std::string> out;
  for (const auto& m : messages) {
    const std::string type = HeaderValue(m, ":message-type");
    if (type == "exception" || type == "error") {
      std::string name = HeaderValue(m, ":exception-type");
      if (name.empty()) name = HeaderValue(m, ":error-code");
      auto payload = nlohmann::json::parse(m.payload, nullptr, /*allow_exceptions=*/false);
      std::string message = m.payload;
      if (payload.is_object() && payload.contains("Message") && payload["Message"].is_string()) {
        message = payload["Message"].get<std::string>();
      }
      return Unavailable("event stream " + type + " " + name + ": " + message);
    }
    if (type != "event" || HeaderValue(m, ":event-type") != "PayloadPart") continue;
    for (std::string& data : sse_.Feed(m.payload)) out.push_back(std::move(data));
  }
  return out;
}

}  // namespace carve::loadgen
