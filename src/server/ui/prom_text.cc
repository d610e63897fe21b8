#include "server/ui/prom_text.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace carve::server::ui {
namespace {

bool IsNameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

// One sample line, read left to right; `pos_` is the next unread character.
class LineReader {
 public:
  LineReader(std::string_view line, size_t number) : line_(line), number_(number) {}

  Result<PromSample> Read() {
    PromSample s;
    CARVE_ASSIGN_OR_RETURN(s.name, Name("metric name"));
    if (Peek() == '{') {
      ++pos_;
      CARVE_RETURN_IF_ERROR(Labels(s.labels));
    }
    SkipSpaces();
    const size_t start = pos_;
    while (pos_ < line_.size() && line_[pos_] != ' ' && line_[pos_] != '\t') ++pos_;
    CARVE_ASSIGN_OR_RETURN(s.value, Value(line_.substr(start, pos_ - start)));
    return s;  // An optional timestamp may follow; the dashboard stamps samples itself.
  }

 private:
  char Peek() const { return pos_ < line_.size() ? line_[pos_] : '\0'; }
  void SkipSpaces() {
    while (Peek() == ' ' || Peek() == '\t') ++pos_;
  }

  Error Fail(std::string_view expected) const {
    return Error{ErrorCode::kInvalidArgument, "metrics line " + std::to_string(number_) + " \"" +
                                                  std::string(line_) + "\": expected " +
                                                  std::string(expected) + " at column " +
                                                  std::to_string(pos_ + 1)};
  }

  Result<std::string> Name(std::string_view what) {
    const size_t start = pos_;
    if (!IsNameStart(Peek())) return Fail(what);
    while (IsNameChar(Peek())) ++pos_;
    return std::string(line_.substr(start, pos_ - start));
  }

  Status Labels(std::vector<std::pair<std::string, std::string>>& out) {
    for (;;) {
      SkipSpaces();
      if (Peek() == '}') {
        ++pos_;
        return Status();
      }
      CARVE_ASSIGN_OR_RETURN(std::string name, Name("a label name or '}'"));
      SkipSpaces();
      if (Peek() != '=') return Fail("'=' after the label name");
      ++pos_;
      SkipSpaces();
      if (Peek() != '"') return Fail("'\"' opening the label value");
      ++pos_;
      std::string value;
      for (;;) {
        if (pos_ >= line_.size()) return Fail("'\"' closing the label value");
        const char c = line_[pos_++];
        if (c == '"') break;
        if (c != '\\') {
          value.push_back(c);
          continue;
        }
        const char e = Peek();
        ++pos_;
        if (e == 'n') {
          value.push_back('\n');
        } else if (e == '\\' || e == '"') {
          value.push_back(e);
        } else {
          --pos_;
          return Fail("\\\\, \\\" or \\n in the label value");
        }
      }
      out.emplace_back(std::move(name), std::move(value));
      SkipSpaces();
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() != '}') {
        return Fail("',' or '}' after the label value");
      }
    }
  }

  Result<double> Value(std::string_view text) const {
    if (text == "+Inf" || text == "Inf") return HUGE_VAL;
    if (text == "-Inf") return -HUGE_VAL;
    if (text == "NaN") return std::nan("");
    const std::string s(text);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return Fail("a number as the sample value");
    return v;
  }

  std::string_view line_;
  size_t number_;
  size_t pos_ = 0;
};

}  // namespace

const std::string* PromSample::Label(std::string_view label_name) const {
  for (const auto& [k, v] : labels) {
    if (k == label_name) return &v;
  }
  return nullptr;
}

Result<std::vector<PromSample>> ParsePromText(std::string_view text,
                                              const std::function<bool(std::string_view)>& keep) {
  std::vector<PromSample> out;
  size_t number = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++number;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    size_t lead = 0;
    while (lead < line.size() && (line[lead] == ' ' || line[lead] == '\t')) ++lead;
    line.remove_prefix(lead);
    if (line.empty() || line.front() == '#') continue;
    CARVE_ASSIGN_OR_RETURN(PromSample sample, LineReader(line, number).Read());
    if (!keep || keep(sample.name)) out.push_back(std::move(sample));
  }
  return out;
}

}  // namespace carve::server::ui
