#include "loadgen/sse_parser.h"

#include <nlohmann/json.hpp>

namespace carve::loadgen {

std::vector<std::string> SseParser::Feed(std::string_view bytes) {
  std::vector<std::string> out;
  for (char c : bytes) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (c == '\n') continue;
    }
    if (c == '\n' || c == '\r') {
      skip_lf_ = c == '\r';
      Line(line_, out);
      line_.clear();
    } else {
      line_ += c;
    }
  }
  return out;
}

std::optional<std::string> SseParser::Finish() {
  std::vector<std::string> out;
  if (!line_.empty()) Line(line_, out);
  line_.clear();
  if (!has_data_) return std::nullopt;
  has_data_ = false;
  return std::exchange(data_, {});
}

void SseParser::Line(std::string_view line, std::vector<std::string>& out) {
  if (line.empty()) {
    if (has_data_) out.push_back(std::exchange(data_, {}));
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;
  const size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field != "data") return;
  if (has_data_) data_ += '\n';
  data_ += value;
  has_data_ = true;
}

namespace {

using nlohmann::json;

bool NonEmptyString(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_string() &&
         !obj[key].get_ref<const std::string&>().empty();
}

}  // namespace

StreamEvent InterpretEvent(std::string_view data) {
  StreamEvent e;
  if (data == "[DONE]") {
    e.done = true;
    return e;
  }
  json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    e.error = "stream event is not a JSON object: '" + std::string(data.substr(0, 80)) + "'";
    return e;
  }
  if (j.contains("error") && !j["error"].is_null()) {
    const json& err = j["error"];
    e.error = err.is_object() && err.contains("message") && err["message"].is_string()
                  ? err["message"].get<std::string>()
                  : err.dump();
    return e;
  }
  if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
    const json& choice = j["choices"][0];
    e.token = NonEmptyString(choice, "text") ||
              (choice.is_object() && choice.contains("delta") &&
               NonEmptyString(choice["delta"], "content"));
  }
  if (j.contains("token") && j["token"].is_object()) {
    e.token = NonEmptyString(j["token"], "text");
    e.done = j.contains("generated_text") && j["generated_text"].is_string();
  }
  if (j.contains("usage") && j["usage"].is_object() && j["usage"].contains("completion_tokens") &&
      j["usage"]["completion_tokens"].is_number_integer()) {
    e.completion_tokens = j["usage"]["completion_tokens"].get<int64_t>();
  }
  return e;
}

}  // namespace carve::loadgen
