// Enums that are spelled on a wire or in a record: each declares its names once, in the order of
// its values (which count from 0), by specialising EnumNames; NameOf and ParseEnum read them.
//
//   enum class Restart { kAlways, kNever };
//   template <> struct EnumNames<Restart> {
//     static constexpr std::array<std::string_view, 2> kNames = {"always", "never"};
//   };
//   NameOf(Restart::kNever) == "never";
//   ParseEnum<Restart>("sometimes", "restart") is InvalidArgument
//     "restart='sometimes': must be one of always, never".
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "common/result.h"

namespace carve {

template <typename E>
struct EnumNames;

template <typename E>
concept NamedEnum = requires {
  EnumNames<E>::kNames;
};

template <NamedEnum E>
constexpr std::string_view NameOf(E e) {
  return EnumNames<E>::kNames[static_cast<size_t>(e)];
}

// The names, comma-separated, for messages.
template <NamedEnum E>
std::string EnumNameList() {
  std::string out;
  for (std::string_view n : EnumNames<E>::kNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// The value spelled `text`; InvalidArgument naming `field`, the value and the accepted names.
template <NamedEnum E>
Result<E> ParseEnum(std::string_view text, std::string_view field) {
  const auto& names = EnumNames<E>::kNames;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) return static_cast<E>(i);
  }
  return InvalidArgument(std::string(field) + "='" + std::string(text.substr(0, 64)) +
                         (text.size() > 64 ? "...'" : "'") + ": must be one of " +
                         EnumNameList<E>());
}

}  // namespace carve
