// UTF-8 validity, for text that arrives as bytes (a config file) and later goes out as JSON,
// whose serializer refuses invalid UTF-8 (nlohmann::json throws on dump).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace carve {

// The offset of the first byte that does not belong to a well-formed UTF-8 sequence (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF), or nullopt when `text` is UTF-8.
std::optional<size_t> FirstInvalidUtf8(std::string_view text);

// The same, also stopping at a control character other than tab, LF and CR (NUL included):
// what a text format such as YAML may not contain (YAML 1.2, c-printable).
std::optional<size_t> FirstNonTextByte(std::string_view text);

// `text` cut to at most `max_bytes` bytes, never inside a character, ending in "..." when it was
// cut: a message that must fit a wire field's maximum length (a SageMaker FailureReason is at
// most 1024 characters; bytes bound characters from above).
std::string FitUtf8(std::string_view text, size_t max_bytes);

}  // namespace carve
