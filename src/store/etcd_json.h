// The etcd JSON gateway's encodings (docs/research/etcd-gateway.md): int64 and uint64 fields are
// JSON strings, bytes fields are padded standard base64, and a field equal to its default
// (0, false, "", []) is left out, so a missing field reads as zero.
#pragma once

#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/base64.h"

namespace carve::store {

// The integer in `field` of `j`, given as a string or a number; 0 when absent or malformed.
template <typename Int = int64_t>
Int JsonInt(const nlohmann::json& j, std::string_view field) {
  if (!j.is_object()) return 0;
  auto it = j.find(field);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<Int>();
  if (!it->is_string()) return 0;
  const auto& s = it->get_ref<const std::string&>();
  Int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() ? v : 0;
}

// The bytes in the base64 `field` of `j`; "" when absent, nullopt when not base64.
inline std::optional<std::string> JsonBytes(const nlohmann::json& j, std::string_view field) {
  if (!j.is_object()) return std::string();
  auto it = j.find(field);
  if (it == j.end()) return std::string();
  if (!it->is_string()) return std::nullopt;
  return Base64Decode(it->get_ref<const std::string&>());
}

}  // namespace carve::store
