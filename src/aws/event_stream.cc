// Event-stream framing. CRC-32 comes from zlib: the same polynomial the spec names, and zlib's
// implementation is table-driven and fast without carrying our own table.
#include "aws/event_stream.h"

#include <zlib.h>

#include <cassert>
#include <cstdint>
#include <string>

namespace carve::aws::eventstream {
namespace {

constexpr size_t kPreludeBytes = 12;
constexpr size_t kOverheadBytes = 16;  // Prelude + message CRC.
constexpr uint8_t kTypeString = 7;

uint32_t Crc32(std::string_view bytes, uint32_t seed = 0) {
  return static_cast<uint32_t>(
      crc32(seed, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

void PutU32(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v >> 24));
  out.push_back(static_cast<char>(v >> 16));
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

void PutU16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

uint64_t GetBE(std::string_view s, size_t pos, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(s[pos + i]);
  return v;
}

std::string HexOf(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    out.push_back(kHex[static_cast<uint8_t>(c) >> 4]);
    out.push_back(kHex[static_cast<uint8_t>(c) & 0xf]);
  }
  return out;
}

// Parses the headers block [0, size) of one message.
Result<std::vector<Header>> ParseHeaders(std::string_view block) {
  std::vector<Header> headers;
  size_t pos = 0;
  auto need = [&](size_t n, const char* what) -> Status {
    if (block.size() - pos < n) {
      return InvalidArgument("event stream header " + std::string(what) + " at offset " +
                             std::to_string(pos) + " runs past the headers block of " +
                             std::to_string(block.size()) + " bytes");
    }
    return OkStatus();
  };
  while (pos < block.size()) {
    Header h;
    size_t name_len = static_cast<uint8_t>(block[pos++]);
    CARVE_RETURN_IF_ERROR(need(name_len + 1, "name"));
    h.name.assign(block.substr(pos, name_len));
    pos += name_len;
    uint8_t type = static_cast<uint8_t>(block[pos++]);
    switch (type) {
      case 0:
        h.value = "true";
        break;
      case 1:
        h.value = "false";
        break;
      case 2:
      case 3:
      case 4:
      case 5:
      case 8: {  // byte, short, int, long, timestamp
        size_t n = type == 2 ? 1 : type == 3 ? 2 : type == 4 ? 4 : 8;
        CARVE_RETURN_IF_ERROR(need(n, "value"));
        uint64_t raw = GetBE(block, pos, n);
        int64_t v = n == 1   ? static_cast<int8_t>(raw)
                    : n == 2 ? static_cast<int16_t>(raw)
                    : n == 4 ? static_cast<int32_t>(raw)
                             : static_cast<int64_t>(raw);
        h.value = std::to_string(v);
        pos += n;
        break;
      }
      case 6:
      case 7: {  // bytes, string
        CARVE_RETURN_IF_ERROR(need(2, "value length"));
        size_t n = GetBE(block, pos, 2);
        pos += 2;
        CARVE_RETURN_IF_ERROR(need(n, "value"));
        h.value.assign(block.substr(pos, n));
        pos += n;
        break;
      }
      case 9: {  // uuid
        CARVE_RETURN_IF_ERROR(need(16, "uuid value"));
        h.value = HexOf(block.substr(pos, 16));
        pos += 16;
        break;
      }
      default:
        return InvalidArgument("event stream header '" + h.name + "' has type " +
                               std::to_string(type) + "; the spec defines types 0..9");
    }
    headers.push_back(std::move(h));
  }
  return headers;
}

}  // namespace

std::string Encode(const Message& message) {
  size_t headers_len = 0;
  for (const Header& h : message.headers) {
    assert(h.name.size() <= 255 && h.value.size() <= kMaxHeaderValueBytes);
    headers_len += 1 + h.name.size() + 1 + 2 + h.value.size();
  }
  const size_t total = kOverheadBytes + headers_len + message.payload.size();
  std::string out;
  out.reserve(total);
  PutU32(out, static_cast<uint32_t>(total));
  PutU32(out, static_cast<uint32_t>(headers_len));
  PutU32(out, Crc32(out));
  for (const Header& h : message.headers) {
    out.push_back(static_cast<char>(h.name.size()));
    out += h.name;
    out.push_back(static_cast<char>(kTypeString));
    PutU16(out, static_cast<uint16_t>(h.value.size()));
    out += h.value;
  }
  out += message.payload;
  PutU32(out, Crc32(out));
  return out;
}

Result<std::vector<Message>> Decoder::Feed(std::string_view bytes) {
  if (failed_) return error_;
  buffer_.append(bytes);
  std::vector<Message> out;
  size_t pos = 0;
  auto fail = [&](std::string why) -> Error {
    failed_ = true;
    error_ = InvalidArgument("event stream message at stream offset +" + std::to_string(pos) +
                             ": " + std::move(why));
    buffer_.clear();
    return error_;
  };
  while (buffer_.size() - pos >= kPreludeBytes) {
    std::string_view view(buffer_);
    const uint32_t total = static_cast<uint32_t>(GetBE(view, pos, 4));
    const uint32_t headers_len = static_cast<uint32_t>(GetBE(view, pos + 4, 4));
    const uint32_t prelude_crc = static_cast<uint32_t>(GetBE(view, pos + 8, 4));
    if (Crc32(view.substr(pos, 8)) != prelude_crc) {
      return fail("prelude CRC-32 mismatch (the frame boundary or length bytes are corrupt)");
    }
    if (total < kOverheadBytes || total > kMaxMessageBytes) {
      return fail("total length " + std::to_string(total) + " is outside 16.." +
                  std::to_string(kMaxMessageBytes));
    }
    if (headers_len > kMaxHeadersBytes || headers_len > total - kOverheadBytes) {
      return fail("headers length " + std::to_string(headers_len) +
                  " exceeds the 128 KiB limit or the message length " + std::to_string(total));
    }
    if (buffer_.size() - pos < total) break;  // Partial message: wait for more bytes.
    const uint32_t message_crc = static_cast<uint32_t>(GetBE(view, pos + total - 4, 4));
    if (Crc32(view.substr(pos, total - 4)) != message_crc) {
      return fail("message CRC-32 mismatch (headers or payload are corrupt)");
    }
    auto headers = ParseHeaders(view.substr(pos + kPreludeBytes, headers_len));
    if (!headers) return fail(headers.error().message);
    Message m;
    m.headers = std::move(headers).value();
    m.payload.assign(
        view.substr(pos + kPreludeBytes + headers_len, total - kOverheadBytes - headers_len));
    out.push_back(std::move(m));
    pos += total;
  }
  buffer_.erase(0, pos);
  return out;
}

}  // namespace carve::aws::eventstream
