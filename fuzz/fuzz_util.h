// Shared by the fuzz targets: a check that holds in every build (libFuzzer or the replay driver)
// and a splitter that turns one input into the parts a target feeds its parser.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

// A property the target asserts over every input. Failing it aborts, which libFuzzer records
// as a crash (with the input saved) and the replay test reports as a failure.
#define FUZZ_CHECK(cond, ...)                                                            \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                 \
      std::fprintf(stderr, "\n");                                                        \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace carve::fuzz {

inline std::string_view AsView(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits `input` at every occurrence of `sep` (empty parts kept), so a seed is readable text:
// "GetEndpoint\0{...}\0CreateModel\0{...}".
inline std::vector<std::string_view> Split(std::string_view input, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    const size_t at = input.find(sep, start);
    if (at == std::string_view::npos) {
      parts.push_back(input.substr(start));
      return parts;
    }
    parts.push_back(input.substr(start, at - start));
    start = at + 1;
  }
}

}  // namespace carve::fuzz
