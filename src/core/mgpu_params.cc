#include "core/mgpu_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace carve::core {
namespace {

struct RoleKeys {
  MgpuRole role;
  std::string_view core;
  std::string_view memory;
  std::string_view legacy_gpus;  // Empty when the role has no legacy key.
};

constexpr std::array<RoleKeys, 3> kRoleKeys = {{
    {MgpuRole::kCustomTask, "emr.serverless.mgpu.core", "emr.serverless.mgpu.memory",
     "serverless.custom.job.task.gpus"},
    {MgpuRole::kRayWorker, "serverless.ray.worker.mgpu.core", "serverless.ray.worker.mgpu.memory",
     "serverless.ray.worker.gpu.amount"},
    {MgpuRole::kRayHead, "serverless.ray.head.mgpu.core", "serverless.ray.head.mgpu.memory", ""},
}};

bool IsKnownKey(std::string_view key) {
  return std::any_of(kRoleKeys.begin(), kRoleKeys.end(), [key](const RoleKeys& r) {
    return key == r.core || key == r.memory || (!r.legacy_gpus.empty() && key == r.legacy_gpus);
  });
}

// Longer keys are no one's typo of a known one (the longest is 34 bytes); the distance below is
// never computed past this.
constexpr size_t kLongestNearMiss = 64;

// Levenshtein distance of two short strings (kLongestNearMiss bounds both).
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The known key nearest to `key`, and how far it is.
std::pair<std::string_view, size_t> NearestKnownKey(std::string_view key) {
  std::pair<std::string_view, size_t> best{"", SIZE_MAX};
  for (const RoleKeys& r : kRoleKeys) {
    for (std::string_view known : {r.core, r.memory, r.legacy_gpus}) {
      if (known.empty()) continue;
      const size_t d = EditDistance(key, known);
      if (d < best.second) best = {known, d};
    }
  }
  return best;
}

// An unknown key meant as an mGPU setting, which would otherwise pass through to the engine and
// leave the task a whole card: one naming mgpu, or one a few edits from a known key (a typo of
// serverless.custom.job.task.gpus). Spark's and Ray's own settings are neither.
bool LooksLikeAnMgpuKey(std::string_view key) {
  if (key.size() > kLongestNearMiss) return false;
  std::string lower(key);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("mgpu") != std::string::npos || NearestKnownKey(lower).second <= 2;
}

// Walks the text keeping line and column (both 1-based).
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}
  bool done() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  bool at_comment() const { return text_.substr(pos_, 2) == "--"; }
  int line() const { return line_; }
  int column() const { return static_cast<int>(pos_ - line_start_) + 1; }
  size_t pos() const { return pos_; }
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      line_start_ = pos_ + 1;
    }
    ++pos_;
  }
  void skip_blanks() {  // Spaces and tabs, not newlines.
    while (!done() && (peek() == ' ' || peek() == '\t' || peek() == '\r')) {
      advance();
    }
  }
  std::string_view slice(size_t from) const { return text_.substr(from, pos_ - from); }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

Error Malformed(const Cursor& at, std::string what) {
  return InvalidArgument(fmt::format("line {}, column {}: {}", at.line(), at.column(), what));
}

// One `key = value ;` starting at a non-blank, non-comment character.
Result<MgpuParam> ParseStatement(Cursor& c) {
  MgpuParam p;
  p.line = c.line();
  p.column = c.column();
  size_t key_from = c.pos();
  while (!c.done() && !IsSpace(c.peek()) && c.peek() != '=' && c.peek() != ';') {
    c.advance();
  }
  p.key = std::string(c.slice(key_from));
  if (p.key.empty()) {
    return Malformed(c, fmt::format("expected a parameter name, found '{}'", c.peek()));
  }
  c.skip_blanks();
  if (c.done() || c.peek() != '=') {
    return Malformed(c, fmt::format("expected '=' after the parameter name '{}'", p.key));
  }
  c.advance();
  c.skip_blanks();
  size_t value_from = c.pos();
  while (!c.done() && c.peek() != ';' && c.peek() != '\n') {
    c.advance();
  }
  p.value = std::string(TrimRight(c.slice(value_from)));
  if (p.value.empty()) {
    return Malformed(c, fmt::format("expected a value after '{}='", p.key));
  }
  if (c.done() || c.peek() != ';') {
    return Malformed(c, fmt::format("expected ';' to end the statement '{}={}'", p.key, p.value));
  }
  c.advance();
  return p;
}

// The last statement setting `key`, or nullptr.
const MgpuParam* Last(const ParsedMgpuParams& parsed, std::string_view key) {
  const MgpuParam* found = nullptr;
  for (const MgpuParam& p : parsed.statements) {
    if (p.key == key) {
      found = &p;
    }
  }
  return found;
}

Result<int64_t> ParseInteger(const MgpuParam& p, std::string_view what) {
  int64_t v = 0;
  const char* first = p.value.data();
  const char* last = first + p.value.size();
  if (first != last && *first == '+') {
    ++first;
  }
  auto [end, ec] = std::from_chars(first, last, v);
  if (ec == std::errc::result_out_of_range) {
    return InvalidArgument(fmt::format("{}={}: the value is out of range", p.key, p.value));
  }
  if (ec != std::errc() || end != last) {
    return InvalidArgument(fmt::format("{}={}: must be a whole number of {} (no units or decimals)",
                                       p.key, p.value, what));
  }
  return v;
}

// The share of one role, or nullopt when the text sets nothing for it.
Result<std::optional<MgpuShare>> ResolveRole(const ParsedMgpuParams& parsed, const RoleKeys& k) {
  const MgpuParam* core = Last(parsed, k.core);
  const MgpuParam* memory = Last(parsed, k.memory);
  const MgpuParam* legacy = k.legacy_gpus.empty() ? nullptr : Last(parsed, k.legacy_gpus);
  if ((core == nullptr) && (memory == nullptr) && (legacy == nullptr)) {
    return std::optional<MgpuShare>();
  }

  std::optional<int64_t> legacy_cards;
  if (legacy != nullptr) {
    CARVE_ASSIGN_OR_RETURN(int64_t n, ParseInteger(*legacy, "GPU cards"));
    if (n < 0 || n > kMaxCorePercent / kFullCardCorePercent) {
      return InvalidArgument(fmt::format("{}={}: the number of GPU cards must be 0..{}",
                                         legacy->key, legacy->value,
                                         kMaxCorePercent / kFullCardCorePercent));
    }
    legacy_cards = n;
  }
  std::optional<int64_t> memory_mib;
  if (memory != nullptr) {
    CARVE_ASSIGN_OR_RETURN(int64_t m, ParseInteger(*memory, "MiB"));
    memory_mib = m;
  }
  ShareParamNames names{k.core, k.memory};

  if (core == nullptr) {
    // No mGPU core: the legacy key (or, on an mGPU queue, the default) means whole cards,
    // "Equivalent to emr.serverless.mgpu.core=100" for N=1.
    int64_t cards = legacy_cards.value_or(1);
    if (memory_mib) {
      return InvalidArgument(fmt::format(
          "{}={}: memory cannot be set when core is 100 or above; {} is not set, so the share is "
          "{} full card{} (core={})",
          memory->key, memory->value, k.core, cards, cards == 1 ? "" : "s", cards * 100));
    }
    if (cards == 0) {
      return std::optional<MgpuShare>();
    }
    CARVE_ASSIGN_OR_RETURN(MgpuShare s, ValidateShare(cards * kFullCardCorePercent, {}, names));
    return std::optional<MgpuShare>(s);
  }

  CARVE_ASSIGN_OR_RETURN(int64_t core_percent, ParseInteger(*core, "percent"));
  CARVE_ASSIGN_OR_RETURN(MgpuShare share, ValidateShare(core_percent, memory_mib, names));
  if (legacy_cards && *legacy_cards != share.card_count()) {
    // The seed sets gpus=1 beside core=30: the task mounts one card and uses 30% of it. Any
    // other card count contradicts the core.
    return InvalidArgument(fmt::format("{}={} conflicts with {}={}: that share uses {} card{}",
                                       legacy->key, legacy->value, core->key, core->value,
                                       share.card_count(), share.card_count() == 1 ? "" : "s"));
  }
  return std::optional<MgpuShare>(share);
}

}  // namespace

std::string_view MgpuRoleName(MgpuRole role) {
  switch (role) {
    case MgpuRole::kCustomTask:
      return "custom task";
    case MgpuRole::kRayWorker:
      return "ray worker";
    case MgpuRole::kRayHead:
      return "ray head";
  }
  return "unknown role";
}

const std::optional<MgpuShare>& ResolvedMgpuParams::ForRole(MgpuRole role) const {
  switch (role) {
    case MgpuRole::kCustomTask:
      return custom_task;
    case MgpuRole::kRayWorker:
      return ray_worker;
    case MgpuRole::kRayHead:
      break;
  }
  return ray_head;
}

Result<ParsedMgpuParams> ParseMgpuParams(std::string_view text) {
  ParsedMgpuParams out;
  std::map<std::string, int, std::less<>> first_line;
  Cursor c(text);
  while (true) {
    while (!c.done() && IsSpace(c.peek())) {
      c.advance();
    }
    if (c.done()) {
      break;
    }
    if (c.at_comment()) {
      while (!c.done() && c.peek() != '\n') {
        c.advance();
      }
      continue;
    }
    CARVE_ASSIGN_OR_RETURN(MgpuParam p, ParseStatement(c));
    auto [it, inserted] = first_line.try_emplace(p.key, p.line);
    if (!inserted) {
      out.warnings.push_back(
          fmt::format("line {}: {} is set again (first on line {}); the last "
                      "value applies",
                      p.line, p.key, it->second));
    }
    if (!IsKnownKey(p.key) && LooksLikeAnMgpuKey(p.key)) {
      return InvalidArgument(fmt::format(
          "line {}, column {}: {} is not an mGPU parameter; did you mean {}? (known: "
          "emr.serverless.mgpu.core, .memory and serverless.custom.job.task.gpus; "
          "serverless.ray.worker.mgpu.core, .memory and serverless.ray.worker.gpu.amount; "
          "serverless.ray.head.mgpu.core and .memory)",
          p.line, p.column, p.key, NearestKnownKey(p.key).first));
    }
    if (!IsKnownKey(p.key)) {
      out.warnings.push_back(fmt::format(
          "line {}: unknown parameter {} is not an mGPU setting; it passes through to the engine",
          p.line, p.key));
    }
    out.statements.push_back(std::move(p));
  }
  return out;
}

Result<ResolvedMgpuParams> ResolveMgpuParams(const ParsedMgpuParams& parsed) {
  ResolvedMgpuParams out;
  out.warnings = parsed.warnings;
  for (const RoleKeys& k : kRoleKeys) {
    CARVE_ASSIGN_OR_RETURN(std::optional<MgpuShare> share, ResolveRole(parsed, k));
    switch (k.role) {
      case MgpuRole::kCustomTask:
        out.custom_task = share;
        break;
      case MgpuRole::kRayWorker:
        out.ray_worker = share;
        break;
      case MgpuRole::kRayHead:
        out.ray_head = share;
        break;
    }
  }
  for (const MgpuParam& p : parsed.statements) {
    if (IsKnownKey(p.key) || Last(parsed, p.key) != &p) {
      continue;
    }
    out.passthrough.push_back(p);
  }
  return out;
}

Result<ResolvedMgpuParams> CheckMgpuParams(std::string_view text) {
  CARVE_ASSIGN_OR_RETURN(ParsedMgpuParams parsed, ParseMgpuParams(text));
  return ResolveMgpuParams(parsed);
}

}  // namespace carve::core
