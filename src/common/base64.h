// Standard base64 with padding (RFC 4648 section 4), over OpenSSL's EVP block coder: AWS bearer
// tokens and etcd's JSON gateway (whose bytes fields are base64) both use it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace carve {

std::string Base64Encode(std::string_view bytes);
// nullopt unless `text` is padded standard base64 (an empty text decodes to empty bytes).
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace carve
