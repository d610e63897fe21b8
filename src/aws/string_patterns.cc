#include "aws/string_patterns.h"

#include <algorithm>

namespace carve::aws {
namespace {

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }

// ECMAScript's `.`: anything but a line terminator (for char, LF and CR).
bool IsAny(char c) { return c != '\n' && c != '\r'; }

template <typename Pred>
bool All(std::string_view s, Pred pred) {
  return std::all_of(s.begin(), s.end(), pred);
}

// Removes `prefix` from the front of `s`; false (and `s` untouched) when it is not there.
bool Consume(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// Removes the longest run of characters satisfying `pred` and returns it.
template <typename Pred>
std::string_view Span(std::string_view& s, Pred pred) {
  size_t n = 0;
  while (n < s.size() && pred(s[n])) ++n;
  std::string_view run = s.substr(0, n);
  s.remove_prefix(n);
  return run;
}

// "arn:aws[a-z-]*:" followed by `service` (then s is what follows).
bool ConsumeArnHead(std::string_view& s, std::string_view service) {
  if (!Consume(s, "arn:aws")) return false;
  Span(s, [](char c) { return IsLower(c) || c == '-'; });  // ':' ends the run: no backtracking.
  return Consume(s, ":") && Consume(s, service);
}

// Exactly twelve digits.
bool ConsumeAccount(std::string_view& s) {
  const std::string_view digits = Span(s, IsDigit);
  return digits.size() == 12;
}

}  // namespace

bool MatchesEndpointName(std::string_view s) {
  // Hyphens only between alphanumerics, and at most 63 alphanumerics (1 + {0,62}).
  if (!MatchesModelName(s)) return false;
  return std::count_if(s.begin(), s.end(), IsAlnum) <= 63;
}

bool MatchesModelName(std::string_view s) {
  return !s.empty() && IsAlnum(s.front()) && IsAlnum(s.back()) &&
         All(s, [](char c) { return IsAlnum(c) || c == '-'; });
}

bool MatchesNameContains(std::string_view s) {
  return !s.empty() && All(s, [](char c) { return IsAlnum(c) || c == '-'; });
}

bool MatchesRoleArn(std::string_view s) {
  if (!ConsumeArnHead(s, "iam::") || !ConsumeAccount(s) || !Consume(s, ":role")) return false;
  // "/?" then one or more of a set that includes '/': together, one or more of the set.
  constexpr std::string_view kPunct = "_+=,.@-/";
  return !s.empty() &&
         All(s, [&](char c) { return IsAlnum(c) || kPunct.find(c) != std::string_view::npos; });
}

bool MatchesResourceArn(std::string_view s) {
  if (!ConsumeArnHead(s, "sagemaker:")) return false;
  Span(s, [](char c) { return IsLower(c) || IsDigit(c) || c == '-'; });  // The region.
  if (!Consume(s, ":") || !ConsumeAccount(s) || !Consume(s, ":")) return false;
  return !s.empty() && All(s, IsAny);
}

bool MatchesPartitionType(std::string_view s) {
  if (!Consume(s, "mig-") || Span(s, IsDigit).empty() || !Consume(s, "g.") ||
      Span(s, IsDigit).empty() || !Consume(s, "gb")) {
    return false;
  }
  // ([+-][a-z0-9.]+)*: the set excludes + and -, so each sign starts the next group.
  while (!s.empty()) {
    if (s.front() != '+' && s.front() != '-') return false;
    s.remove_prefix(1);
    if (Span(s, [](char c) { return IsLower(c) || IsDigit(c) || c == '.'; }).empty()) {
      return false;
    }
  }
  return true;
}

bool MatchesNoSpace(std::string_view s) {
  // \S in the classic locale: not one of space, \t, \n, \v, \f, \r.
  return !s.empty() && All(s, [](char c) {
    return std::string_view(" \t\n\v\f\r").find(c) == std::string_view::npos;
  });
}

bool MatchesModelDataUrl(std::string_view s) {
  if (Consume(s, "file:///") || Consume(s, "/")) return All(s, IsAny);
  if (!Consume(s, "https://") && !Consume(s, "s3://")) return false;
  // [^/]+ takes every character before the first '/' (it may hold what `.` may not); then
  // "/?(.*)" takes the rest, which must be free of line terminators.
  const std::string_view host = Span(s, [](char c) { return c != '/'; });
  return !host.empty() && All(s, IsAny);
}

}  // namespace carve::aws
