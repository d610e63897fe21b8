// The AWS event-stream binary framing (application/vnd.amazon.eventstream), as used by
// InvokeEndpointWithResponseStream: each message is
//   prelude   total_length u32 BE | headers_length u32 BE | prelude_crc u32 BE (CRC-32 of 8 bytes)
//   headers   repeated: name_len u8 | name | type u8 | value (type 7 string: len u16 BE | bytes)
//   payload   total_length - headers_length - 16 bytes
//   trailer   message_crc u32 BE (CRC-32 of everything before it)
// CRC-32 is the IEEE/zlib polynomial. Encode writes string (type 7) headers only; the Decoder
// reads every header type (0..9) and renders non-string values as text (bool "true"/"false",
// integers and timestamps in decimal, bytes verbatim, uuid as 32 lowercase hex digits).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace carve::aws::eventstream {

struct Header {
  std::string name;
  std::string value;
  friend bool operator==(const Header&, const Header&) = default;
};

struct Message {
  std::vector<Header> headers;
  std::string payload;
  friend bool operator==(const Message&, const Message&) = default;
};

// Limits from the AWS event-stream specification: a whole message is at most 16 MiB and its
// headers at most 128 KiB; a header name at most 255 bytes, a string value at most 32767.
inline constexpr size_t kMaxMessageBytes = size_t{16} * 1024 * 1024;
inline constexpr size_t kMaxHeadersBytes = size_t{128} * 1024;
inline constexpr size_t kMaxHeaderValueBytes = 32767;

// Frames `message`. A header name longer than 255 bytes or value longer than
// kMaxHeaderValueBytes is a programmer error (assert); callers pass fixed names and small values.
std::string Encode(const Message& message);

// Incremental decoder: Feed() any chunking of a byte stream; it returns the messages completed
// by these bytes (possibly none) and buffers a trailing partial message for the next call.
// InvalidArgument (naming the rule: prelude CRC, message CRC, lengths, header type) when the
// stream is corrupt; after an error the decoder stays failed and returns that error again.
// Not thread-safe.
class Decoder {
 public:
  Result<std::vector<Message>> Feed(std::string_view bytes);
  // Bytes buffered of an incomplete message.
  size_t buffered_bytes() const { return buffer_.size(); }

 private:
  std::string buffer_;
  bool failed_ = false;
  Error error_{ErrorCode::kInvalidArgument, ""};
};

}  // namespace carve::aws::eventstream
