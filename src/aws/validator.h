// Validator: checks request members against the SageMaker model's constraints and words every
// violation the way the real service does:
//   1 validation error detected: Value 'x' at 'endpointName' failed to satisfy constraint:
//   Member must satisfy regular expression pattern: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}
// Several violations are joined by "; " under "N validation errors detected: ".
//
// Paths follow the service's spelling: member names in lowerCamelCase, list elements as
// "<list>.<1-based index>.member" (e.g. "productionVariants.1.member.instanceType").
// A Validator is a plain value; use one per request. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace carve::aws {

using nlohmann::json;

// The most bytes of a caller's value that a violation quotes (then "..."): a message never
// grows with the input.
inline constexpr size_t kMaxShownValueBytes = 256;

// A string member's modeled constraints, checked in order: length (a failure ends the checks),
// enum, pattern. There is no regex engine: `matches` is a hand-written matcher
// (string_patterns.h) for the modeled `pattern`, which is the text the message quotes.
struct StringRule {
  int min_len = 0;
  int max_len = -1;                               // -1: unbounded.
  std::string_view pattern;                       // The modeled regex, as quoted; empty: none.
  std::span<const std::string_view> enum_values;  // Empty: any value.
  bool (*matches)(std::string_view) = nullptr;    // Set whenever `pattern` is.
};

// Builders that keep call sites short (and -Wmissing-field-initializers quiet).
constexpr StringRule LengthRule(int min_len, int max_len) {
  StringRule r;
  r.min_len = min_len;
  r.max_len = max_len;
  return r;
}
constexpr StringRule PatternRule(int min_len, int max_len, std::string_view pattern,
                                 bool (*matches)(std::string_view)) {
  StringRule r = LengthRule(min_len, max_len);
  r.pattern = pattern;
  r.matches = matches;
  return r;
}
constexpr StringRule EnumRule(std::span<const std::string_view> values) {
  StringRule r;
  r.enum_values = values;
  return r;
}

struct NumberRule {
  std::optional<double> min;
  std::optional<double> max;
};

// A request member carve does not implement: refused, never ignored. `unless` is the one value
// that asks for nothing (EnableSSMAccess=false); nullopt: any value is refused.
struct UnsupportedMember {
  std::string_view member;
  std::string_view reason;  // Why, and what to do instead: the end of the message.
  std::optional<bool> unless = std::nullopt;
};

// "productionVariants.1.member" for element `index` (0-based) of the list at `list_path`.
std::string ElementPath(std::string_view list_path, size_t index);
// "a.b" + "EndpointName" -> "a.b.endpointName"; "" + "EndpointName" -> "endpointName".
std::string MemberPath(std::string_view parent_path, std::string_view member);

class Validator {
 public:
  // Records one violation: `value` is the offending value as the message shows it, without
  // quotes (nullopt prints `null`, as the service does for missing required members).
  void Fail(std::string_view path, std::optional<std::string> value, std::string_view constraint);

  bool ok() const { return violations_.empty(); }
  // OkStatus when nothing failed, else InvalidArgument with the service's message.
  Status ToStatus() const;

  // Each accessor reads `member` of the JSON object `parent` (path is the parent's path), checks
  // it, records violations, and returns the value only when it is present and valid.
  std::optional<std::string> String(const json& parent, std::string_view member,
                                    std::string_view parent_path, const StringRule& rule,
                                    bool required);
  std::optional<int64_t> Integer(const json& parent, std::string_view member,
                                 std::string_view parent_path, const NumberRule& rule,
                                 bool required);
  // Float members accept any JSON number (the CLI sends 1.0 for 1).
  std::optional<double> Number(const json& parent, std::string_view member,
                               std::string_view parent_path, const NumberRule& rule, bool required);
  std::optional<bool> Bool(const json& parent, std::string_view member,
                           std::string_view parent_path, bool required);
  // Objects and lists are returned as pointers into `parent` (valid while it lives).
  const json* Object(const json& parent, std::string_view member, std::string_view parent_path,
                     bool required);
  const json* List(const json& parent, std::string_view member, std::string_view parent_path,
                   int min_items, int max_items, bool required);
  // Records "carve does not support <Member>: <reason>" for each of `members` present in
  // `parent` (a boolean equal to its `unless` value passes).
  void Unsupported(const json& parent, std::span<const UnsupportedMember> members,
                   std::string_view parent_path);

 private:
  const json* Present(const json& parent, std::string_view member, std::string_view path,
                      bool required);
  std::vector<std::string> violations_;
};

}  // namespace carve::aws
