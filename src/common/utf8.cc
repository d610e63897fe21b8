#include "common/utf8.h"

#include <cstdint>

namespace carve {

std::optional<size_t> FirstInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<uint8_t>(text[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    // Lead byte -> sequence length and the range its second byte must fall in (RFC 3629
    // section 4), which rules out overlong forms, surrogates and code points past U+10FFFF.
    size_t len = 0;
    uint8_t lo = 0x80;
    uint8_t hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > text.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      const auto c = static_cast<uint8_t>(text[i + k]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return i;
    }
    i += len;
  }
  return std::nullopt;
}

std::optional<size_t> FirstNonTextByte(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<uint8_t>(text[i]);
    if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F) {
      const auto utf8 = FirstInvalidUtf8(text.substr(0, i));
      return utf8 ? *utf8 : i;
    }
  }
  return FirstInvalidUtf8(text);
}

std::string FitUtf8(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  constexpr std::string_view kCut = "...";
  if (max_bytes < kCut.size()) return std::string(kCut.substr(0, max_bytes));
  size_t end = max_bytes - kCut.size();
  // Back off continuation bytes (10xxxxxx) to the start of the character the cut falls in.
  while (end > 0 && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end)) + std::string(kCut);
}

}  // namespace carve
