// Server-sent events (the WHATWG event-stream format) read incrementally, and the meaning of
// one event's data for the streaming APIs `carve bench` drives: OpenAI completions and chat
// chunks (vLLM, SGLang, carve testmodel) and TGI-style SageMaker chunks ({"token": {...}}).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace carve::loadgen {

// Feed bytes as they arrive, in pieces of any size (a line, a CRLF pair or a UTF-8 character
// may be split between pieces); each completed event's data is returned once. Lines end with
// LF, CRLF or CR; an event ends at a blank line; several `data:` lines join with '\n'; comments
// (':') and other fields are ignored. Not thread-safe.
class SseParser {
 public:
  std::vector<std::string> Feed(std::string_view bytes);
  // Data of an event the stream ended without terminating with a blank line, if any.
  std::optional<std::string> Finish();

 private:
  void Line(std::string_view line, std::vector<std::string>& out);

  std::string line_;           // the current, incomplete line
  std::string data_;           // data of the current event so far
  bool has_data_ = false;
  bool skip_lf_ = false;       // the previous piece ended with CR: a leading LF belongs to it
};

// What one event's data says.
struct StreamEvent {
  bool token = false;                     // carries generated text (one output chunk)
  std::optional<int64_t> completion_tokens;  // the usage the server reported
  bool done = false;                      // the stream's end marker ("[DONE]", TGI's final)
  std::optional<std::string> error;       // the server reported a failure
};

// Understands OpenAI completions (choices[0].text), chat (choices[0].delta.content), usage
// objects, "[DONE]", TGI chunks ({"token": {"text"}}, final "generated_text") and error
// objects ({"error": {"message"}} or {"error": "..."}). Data that is not JSON is an error event
// naming the first bytes.
StreamEvent InterpretEvent(std::string_view data);

}  // namespace carve::loadgen
