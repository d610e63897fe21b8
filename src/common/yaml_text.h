// A YAML scalar read as carve text: UTF-8 without control characters, since a config's strings
// go out as JSON (the agents' desired state) and into argv and environments.
//
// Checking the file's bytes (FirstNonTextByte) is not enough: yaml-cpp 0.7, Debian 12's, decodes
// two escapes of a double-quoted scalar to lone bytes that are not UTF-8, "\_" to A0 and "\N" to
// 85 (YAML 1.2 means U+00A0 and U+0085, two bytes each), and "\0" to a NUL. The fuzz target
// runtime_yaml found the first (fuzz/corpus/runtime_yaml/crash-escape-decodes-to-a-lone-byte).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/utf8.h"

namespace carve {

// `n` as a string, or InvalidArgument naming `where` and the offending byte. Throws what
// YAML::Node::as throws for a node that is not a scalar.
inline Result<std::string> YamlText(const YAML::Node& n, std::string_view where) {
  std::string s = n.as<std::string>();
  if (auto bad = FirstNonTextByte(s)) {
    return InvalidArgument(std::string(where) + ": byte " + std::to_string(*bad) +
                           " of the value is not UTF-8 text (a control character, or one of the "
                           "escapes \\_ and \\N, which this YAML library decodes to a lone byte; "
                           "write the character itself)");
  }
  return s;
}

// The server's --config text as YAML. Its commands and variables go out as JSON (the agents'
// desired state), which must be UTF-8, and YAML allows no control characters (yaml-cpp reads a
// NUL as the end of the text). InvalidArgument "config: byte N is not UTF-8 text" or "config:
// not valid YAML: ...".
inline Result<YAML::Node> LoadConfigText(std::string_view text) {
  if (auto bad = FirstNonTextByte(text)) {
    return InvalidArgument("config: byte " + std::to_string(*bad) + " is not UTF-8 text");
  }
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("config: not valid YAML: ") + e.what());
  }
}

}  // namespace carve
