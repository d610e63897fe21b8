// JSON from outside the process (request bodies, agent messages, stored records) parsed with
// bounded nesting and no duplicate keys, and bounded previews of values for error messages:
// nothing here recurses deeper than a fixed limit, whatever the input.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"

namespace carve {

// The deepest nesting ParseJson accepts: a scalar or empty text is depth 0, `[]` and `{}` are
// depth 1, `[[1]]` depth 2. SageMaker's deepest modeled request (UpdateEndpoint's deployment
// config) is 6 levels; an OpenAI tool's parameter schema is a JSON Schema that real tools keep
// under 20. 64 leaves room for both while every recursive walker of a parsed value
// (nlohmann's dump() and operator==, the validators) stays a few kilobytes of stack deep.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as one JSON value (RFC 8259; no comments, nothing after the value) that nests
// at most `max_depth` levels and repeats no key within an object. Never throws, and its stack
// use does not grow with the input (nlohmann's parser keeps its own stack). InvalidArgument
// otherwise; the message is a predicate that reads after a noun ("Request body " + message):
//   "is not valid JSON: <where and why, at most ~200 bytes>"
//   "nests arrays and objects deeper than 64 levels (the JSON depth limit)"
//   "has the key \"Name\" more than once in one object (duplicate JSON keys are refused)"
[[nodiscard]] Result<nlohmann::json> ParseJson(std::string_view text,
                                               int max_depth = kMaxJsonDepth);

// At most about `max_bytes` of `text`, cut before a UTF-8 sequence that would not fit, with
// "..." appended when anything was cut. For quoting a caller's string in a message.
std::string TextPreview(std::string_view text, size_t max_bytes = 256);

// `v` as compact JSON for a message, bounded: containers nested deeper than `max_depth` show as
// [...] or {...}, and the text is cut as TextPreview cuts it. Invalid UTF-8 in strings is
// replaced (U+FFFD), so the result always serialises. It recurses at most `max_depth` levels
// and stops reading once the text is long enough; it never calls dump() on a container.
std::string JsonPreview(const nlohmann::json& v, size_t max_bytes = 256, int max_depth = 3);

}  // namespace carve
