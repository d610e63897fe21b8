// The AWS event-stream framing (src/aws/event_stream.h): the router decodes frames a
// copy streams back, the load generator decodes the server's. Properties, beyond "no crash, no
// leak, no UB":
//  - chunking does not matter: the input fed whole and fed in pieces of 1, 2, 3, ... bytes
//    gives the same messages, and fails exactly when the other fails;
//  - round trip: every decoded message that Encode can frame decodes from Encode's bytes to
//    itself, and so does a message built from the input's own text.
#include <string>
#include <vector>

#include "aws/event_stream.h"
#include "fuzz_util.h"

namespace {

namespace es = carve::aws::eventstream;

bool Encodable(const es::Message& m) {
  size_t headers = 0;
  for (const es::Header& h : m.headers) {
    if (h.name.size() > 255 || h.value.size() > es::kMaxHeaderValueBytes) return false;
    headers += 1 + h.name.size() + 3 + h.value.size();
  }
  return headers <= es::kMaxHeadersBytes && headers + m.payload.size() + 16 <= es::kMaxMessageBytes;
}

void CheckRoundTrip(const es::Message& m) {
  if (!Encodable(m)) return;
  es::Decoder d;
  auto got = d.Feed(es::Encode(m));
  FUZZ_CHECK(got.has_value(), "Encode's own frame does not decode: %s",
             got.error().message.c_str());
  FUZZ_CHECK(got->size() == 1 && (*got)[0] == m, "round trip changed the message");
  FUZZ_CHECK(d.buffered_bytes() == 0, "a whole frame left %zu bytes buffered", d.buffered_bytes());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = carve::fuzz::AsView(data, size);

  es::Decoder whole;
  auto all = whole.Feed(input);

  es::Decoder pieces;
  std::vector<es::Message> collected;
  bool failed = false;
  for (size_t pos = 0, n = 1; pos < input.size() && !failed; pos += n, ++n) {
    auto got = pieces.Feed(input.substr(pos, n));
    if (!got) {
      failed = true;
      break;
    }
    for (auto& m : *got) collected.push_back(std::move(m));
  }
  FUZZ_CHECK(all.has_value() == !failed, "whole: %s, in pieces: %s",
             all.has_value() ? "ok" : all.error().message.c_str(), failed ? "failed" : "ok");
  if (all) {
    FUZZ_CHECK(*all == collected, "whole gave %zu messages, in pieces %zu", all->size(),
               collected.size());
    FUZZ_CHECK(whole.buffered_bytes() == pieces.buffered_bytes(), "buffered %zu vs %zu",
               whole.buffered_bytes(), pieces.buffered_bytes());
    for (const es::Message& m : *all) CheckRoundTrip(m);
  } else {
    auto again = whole.Feed("");
    FUZZ_CHECK(!again.has_value(), "a failed decoder recovered");
  }

  // A message of the input's own text: "name=value" lines, then the payload after "\n\n".
  es::Message built;
  const size_t blank = input.find("\n\n");
  for (std::string_view line : carve::fuzz::Split(input.substr(0, blank), '\n')) {
    const size_t eq = line.find('=');
    built.headers.push_back({std::string(line.substr(0, eq)),
                             eq == std::string_view::npos ? "" : std::string(line.substr(eq + 1))});
  }
  if (blank != std::string_view::npos) built.payload = std::string(input.substr(blank + 2));
  CheckRoundTrip(built);
  return 0;
}
