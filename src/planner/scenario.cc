#include "planner/scenario.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace carve::planner {
namespace {

constexpr std::string_view kForms = "D(in,out) or N(mean_in,sd_in)/(mean_out,sd_out)";

std::string StripSpaces(std::string_view text) {
  std::string s;
  for (char c : text) {
    if (c != ' ' && c != '\t') s += c;
  }
  return s;
}

// Parses "(a,b)" at `pos`, advancing it. Values may be decimals (N means), rounded to integers.
bool ParsePair(const std::string& s, size_t& pos, double& a, double& b) {
  if (pos >= s.size() || s[pos] != '(') return false;
  size_t close = s.find(')', pos);
  if (close == std::string::npos) return false;
  std::string inner = s.substr(pos + 1, close - pos - 1);
  size_t comma = inner.find(',');
  if (comma == std::string::npos) return false;
  try {
    size_t used_a = 0, used_b = 0;
    std::string sa = inner.substr(0, comma), sb = inner.substr(comma + 1);
    a = std::stod(sa, &used_a);
    b = std::stod(sb, &used_b);
    if (used_a != sa.size() || used_b != sb.size()) return false;
  } catch (const std::exception&) {
    return false;
  }
  pos = close + 1;
  return true;
}

}  // namespace

Result<Scenario> ParseScenario(std::string_view text) {
  std::string s = StripSpaces(text);
  Scenario sc;
  sc.text = s;
  size_t pos = 1;
  double a = 0, b = 0;
  auto bad = [&](std::string_view why) {
    return InvalidArgument(
        fmt::format("scenario '{}' {}; expected {}", text, why, kForms));
  };
  if (s.size() < 2) return bad("is too short");
  if (s[0] == 'D' || s[0] == 'd') {
    if (!ParsePair(s, pos, a, b) || pos != s.size()) return bad("does not parse");
    sc.input_tokens = std::llround(a);
    sc.output_tokens = std::llround(b);
  } else if (s[0] == 'N' || s[0] == 'n') {
    double c = 0, d = 0;
    if (!ParsePair(s, pos, a, b) || pos >= s.size() || s[pos] != '/') return bad("does not parse");
    ++pos;
    if (!ParsePair(s, pos, c, d) || pos != s.size()) return bad("does not parse");
    if (b < 0 || d < 0) return bad("has a negative standard deviation");
    sc.input_tokens = std::llround(a);
    sc.output_tokens = std::llround(c);
    sc.note = fmt::format(
        "N() scenario simulated at its means ({} in, {} out); the spread (sd {} / {}) is not "
        "modelled",
        sc.input_tokens, sc.output_tokens, b, d);
  } else {
    return bad("has an unknown distribution letter");
  }
  if (sc.input_tokens < 1 || sc.output_tokens < 1) {
    return bad(fmt::format("has input={} output={} tokens; both must be >= 1", sc.input_tokens,
                           sc.output_tokens));
  }
  return sc;
}

Result<std::vector<Scenario>> ParseScenarios(std::string_view text) {
  std::string s = StripSpaces(text);
  std::vector<Scenario> out;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    bool end = i == s.size();
    if (!end && s[i] == '(') ++depth;
    if (!end && s[i] == ')') --depth;
    if (end || (depth == 0 && (s[i] == ';' || (s[i] == ',' && i > 0 && s[i - 1] == ')' &&
                                               i + 1 < s.size() && s[i + 1] != '(')))) {
      if (i > start) {
        CARVE_ASSIGN_OR_RETURN(Scenario sc, ParseScenario(s.substr(start, i - start)));
        out.push_back(std::move(sc));
      }
      start = i + 1;
    }
  }
  if (out.empty()) return InvalidArgument(fmt::format("scenarios '{}' names none", text));
  return out;
}

Result<std::vector<int>> ParseConcurrency(std::string_view text) {
  std::string s = StripSpaces(text);
  auto bad = [&](std::string_view item) {
    return InvalidArgument(fmt::format(
        "concurrency '{}': item '{}' is not a positive integer; use '1,2,4', '2..512' or "
        "'1,2,4,...,512'",
        text, item));
  };
  auto parse_int = [](std::string_view item, int& v) {
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    return ec == std::errc() && p == item.data() + item.size() && v > 0;
  };
  auto ladder = [](std::vector<int>& out, int from, int to) {
    for (int64_t v = from * 2; v <= to; v *= 2) out.push_back(static_cast<int>(v));
    if (out.back() != to) out.push_back(to);
  };
  std::vector<int> out;
  if (auto dots = s.find(".."); dots != std::string::npos && s.find("...") == std::string::npos) {
    int a = 0, b = 0;
    if (!parse_int(s.substr(0, dots), a)) return bad(s.substr(0, dots));
    if (!parse_int(s.substr(dots + 2), b) || b < a) return bad(s.substr(dots + 2));
    out.push_back(a);
    if (b > a) ladder(out, a, b);
    return out;
  }
  size_t pos = 0;
  bool pending_ellipsis = false;
  while (pos <= s.size()) {
    size_t comma = std::min(s.find(',', pos), s.size());
    std::string item = s.substr(pos, comma - pos);
    pos = comma + 1;
    if (item == "...") {
      if (out.empty()) return bad(item);
      pending_ellipsis = true;
      continue;
    }
    int v = 0;
    if (!parse_int(item, v)) return bad(item);
    if (pending_ellipsis) {
      if (v <= out.back()) return bad(item);
      ladder(out, out.back(), v);
      pending_ellipsis = false;
    } else {
      out.push_back(v);
    }
  }
  if (pending_ellipsis) return bad("...");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace carve::planner
