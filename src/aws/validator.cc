#include "aws/validator.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <limits>

#include "common/bounded_json.h"

namespace carve::aws {
namespace {

std::string LowerCamel(std::string_view member) {
  std::string out(member);
  if (!out.empty()) out[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[0])));
  return out;
}

// How the service prints a non-string value inside Value '...': bounded, since the value is
// the caller's (Fail cuts strings; containers are cut here, never dump()ed whole).
std::string Repr(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return JsonPreview(v, kMaxShownValueBytes);
}

std::string JoinEnum(std::span<const std::string_view> values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += values[i];
  }
  return out + "]";
}

std::string FormatBound(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v))) {
    return std::to_string(static_cast<int64_t>(v));
  }
  return fmt::format("{}", v);
}

}  // namespace

std::string ElementPath(std::string_view list_path, size_t index) {
  return fmt::format("{}.{}.member", list_path, index + 1);
}

std::string MemberPath(std::string_view parent_path, std::string_view member) {
  if (parent_path.empty()) return LowerCamel(member);
  return fmt::format("{}.{}", parent_path, LowerCamel(member));
}

void Validator::Fail(std::string_view path, std::optional<std::string> value,
                     std::string_view constraint) {
  std::string shown =
      value ? fmt::format("'{}'", TextPreview(*value, kMaxShownValueBytes)) : std::string("null");
  violations_.push_back(
      fmt::format("Value {} at '{}' failed to satisfy constraint: {}", shown, path, constraint));
}

Status Validator::ToStatus() const {
  if (violations_.empty()) return OkStatus();
  std::string msg = fmt::format("{} validation error{} detected: ", violations_.size(),
                                violations_.size() == 1 ? "" : "s");
  for (size_t i = 0; i < violations_.size(); ++i) {
    if (i > 0) msg += "; ";
    msg += violations_[i];
  }
  return InvalidArgument(std::move(msg));
}

const json* Validator::Present(const json& parent, std::string_view member, std::string_view path,
                               bool required) {
  const json* v = nullptr;
  if (parent.is_object()) {
    auto it = parent.find(member);
    if (it != parent.end() && !it->is_null()) v = &*it;
  }
  if (v == nullptr && required) Fail(path, std::nullopt, "Member must not be null");
  return v;
}

void Validator::Unsupported(const json& parent, std::span<const UnsupportedMember> members,
                            std::string_view parent_path) {
  for (const UnsupportedMember& m : members) {
    const std::string path = MemberPath(parent_path, m.member);
    const json* v = Present(parent, m.member, path, false);
    if (v == nullptr) continue;
    if (m.unless && v->is_boolean() && v->get<bool>() == *m.unless) continue;
    const std::string shown = v->is_object() ? "{...}" : v->is_array() ? "[...]" : Repr(*v);
    Fail(path, shown, fmt::format("carve does not support {}: {}", m.member, m.reason));
  }
}

std::optional<std::string> Validator::String(const json& parent, std::string_view member,
                                             std::string_view parent_path, const StringRule& rule,
                                             bool required) {
  const std::string path = MemberPath(parent_path, member);
  const json* v = Present(parent, member, path, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    Fail(path, Repr(*v), "Member must be a string");
    return std::nullopt;
  }
  const std::string& s = v->get_ref<const std::string&>();
  // Lengths first, and a failed one ends the checks: the pattern never sees a value longer
  // than its rule allows (issue 35: a 50,000-character name once reached std::regex).
  if (s.size() < static_cast<size_t>(rule.min_len)) {
    Fail(path, s, fmt::format("Member must have length greater than or equal to {}", rule.min_len));
    return std::nullopt;
  }
  if (rule.max_len >= 0 && s.size() > static_cast<size_t>(rule.max_len)) {
    Fail(path, s, fmt::format("Member must have length less than or equal to {}", rule.max_len));
    return std::nullopt;
  }
  const size_t before = violations_.size();
  if (!rule.enum_values.empty()) {
    bool found = false;
    for (auto e : rule.enum_values) found = found || e == s;
    if (!found) {
      Fail(path, s, "Member must satisfy enum value set: " + JoinEnum(rule.enum_values));
    }
  }
  if (!rule.pattern.empty()) {
    if (!rule.matches(s)) {
      Fail(path, s,
           fmt::format("Member must satisfy regular expression pattern: {}", rule.pattern));
    }
  }
  if (violations_.size() != before) return std::nullopt;
  return s;
}

std::optional<double> Validator::Number(const json& parent, std::string_view member,
                                        std::string_view parent_path, const NumberRule& rule,
                                        bool required) {
  const std::string path = MemberPath(parent_path, member);
  const json* v = Present(parent, member, path, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) {
    Fail(path, Repr(*v), "Member must be a number");
    return std::nullopt;
  }
  double d = v->get<double>();
  const size_t before = violations_.size();
  if (rule.min && d < *rule.min) {
    Fail(path, Repr(*v),
         "Member must have value greater than or equal to " + FormatBound(*rule.min));
  }
  if (rule.max && d > *rule.max) {
    Fail(path, Repr(*v), "Member must have value less than or equal to " + FormatBound(*rule.max));
  }
  if (violations_.size() != before) return std::nullopt;
  return d;
}

std::optional<int64_t> Validator::Integer(const json& parent, std::string_view member,
                                          std::string_view parent_path, const NumberRule& rule,
                                          bool required) {
  const std::string path = MemberPath(parent_path, member);
  const json* raw = nullptr;
  if (parent.is_object()) {
    auto it = parent.find(member);
    raw = it != parent.end() ? &*it : nullptr;
    if (raw != nullptr && raw->is_number_float() &&
        std::trunc(raw->get<double>()) != raw->get<double>()) {
      Fail(path, Repr(*raw), "Member must be an integer");
      return std::nullopt;
    }
  }
  auto d = Number(parent, member, parent_path, rule, required);
  if (!d) return std::nullopt;
  const bool too_big_unsigned =
      raw->is_number_unsigned() &&
      raw->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (raw->is_number_integer() && !too_big_unsigned) return raw->get<int64_t>();  // Exact.
  // A rule without bounds still ends at int64's: a float spelling at or beyond 2^63 (1e69) does
  // not convert, nor does an unsigned integer above INT64_MAX.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (too_big_unsigned || *d >= kTwoTo63 || *d < -kTwoTo63) {
    Fail(path, Repr(*raw),
         *d > 0 ? "Member must have value less than or equal to 9223372036854775807"
                : "Member must have value greater than or equal to -9223372036854775808");
    return std::nullopt;
  }
  return static_cast<int64_t>(*d);
}

std::optional<bool> Validator::Bool(const json& parent, std::string_view member,
                                    std::string_view parent_path, bool required) {
  const std::string path = MemberPath(parent_path, member);
  const json* v = Present(parent, member, path, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    Fail(path, Repr(*v), "Member must be a boolean");
    return std::nullopt;
  }
  return v->get<bool>();
}

const json* Validator::Object(const json& parent, std::string_view member,
                              std::string_view parent_path, bool required) {
  const std::string path = MemberPath(parent_path, member);
  const json* v = Present(parent, member, path, required);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) {
    Fail(path, Repr(*v), "Member must be a structure");
    return nullptr;
  }
  return v;
}

const json* Validator::List(const json& parent, std::string_view member,
                            std::string_view parent_path, int min_items, int max_items,
                            bool required) {
  const std::string path = MemberPath(parent_path, member);
  const json* v = Present(parent, member, path, required);
  if (v == nullptr) return nullptr;
  if (!v->is_array()) {
    Fail(path, Repr(*v), "Member must be a list");
    return nullptr;
  }
  const int n = static_cast<int>(v->size());
  if (n < min_items) {
    Fail(path, Repr(*v),
         fmt::format("Member must have length greater than or equal to {}", min_items));
    return nullptr;
  }
  if (max_items >= 0 && n > max_items) {
    Fail(path, Repr(*v),
         fmt::format("Member must have length less than or equal to {}", max_items));
    return nullptr;
  }
  return v;
}

}  // namespace carve::aws
