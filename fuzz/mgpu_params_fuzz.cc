// The mGPU parameter text of a job (src/core/mgpu_params.h): the whole text is untrusted (it
// arrives in a job request). Properties, beyond "no crash, no leak, no UB":
//  - a rejection names its line and column;
//  - every statement's (line, column) points at its key in the text;
//  - the statements, written back one per line as `key=value;`, parse to the same statements;
//  - a resolved share obeys the share rules (ValidateShare accepts it unchanged).
#include <string>

#include "core/mgpu_params.h"
#include "core/share.h"
#include "fuzz_util.h"

namespace {

using carve::core::MgpuParam;
using carve::core::MgpuShare;

// The text from (line, column), both 1-based.
std::string_view At(std::string_view text, int line, int column) {
  size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string_view::npos) return {};
    ++pos;
  }
  if (column < 1 || pos + static_cast<size_t>(column) - 1 > text.size()) return {};
  return text.substr(pos + static_cast<size_t>(column) - 1);
}

void CheckShare(const std::optional<MgpuShare>& share) {
  if (!share) return;
  auto again = carve::core::ValidateShare(share->core_percent, share->memory_mib);
  FUZZ_CHECK(again.has_value() && *again == *share, "resolved share %s breaks the share rules",
             share->ToString().c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = carve::fuzz::AsView(data, size);
  auto parsed = carve::core::ParseMgpuParams(text);
  if (!parsed) {
    FUZZ_CHECK(parsed.error().message.rfind("line ", 0) == 0,
               "a rejection must start with its line: %s", parsed.error().message.c_str());
    return 0;
  }
  std::string rewritten;
  for (const MgpuParam& p : parsed->statements) {
    FUZZ_CHECK(At(text, p.line, p.column).substr(0, p.key.size()) == p.key,
               "statement '%s' is not at line %d column %d", p.key.c_str(), p.line, p.column);
    rewritten += p.key + "=" + p.value + ";\n";
  }
  auto reparsed = carve::core::ParseMgpuParams(rewritten);
  FUZZ_CHECK(reparsed.has_value(), "rewritten statements do not parse: %s\n%s",
             reparsed.error().message.c_str(), rewritten.c_str());
  FUZZ_CHECK(reparsed->statements.size() == parsed->statements.size(),
             "rewriting changed the statement count");
  for (size_t i = 0; i < parsed->statements.size(); ++i) {
    FUZZ_CHECK(reparsed->statements[i].key == parsed->statements[i].key &&
                   reparsed->statements[i].value == parsed->statements[i].value,
               "statement %zu changed on rewriting", i);
  }
  auto resolved = carve::core::ResolveMgpuParams(*parsed);
  if (resolved) {
    CheckShare(resolved->custom_task);
    CheckShare(resolved->ray_worker);
    CheckShare(resolved->ray_head);
  }
  return 0;
}
