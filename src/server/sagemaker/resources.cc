#include "server/sagemaker/resources.h"

#include <fmt/format.h>

namespace carve::server::sagemaker {
namespace {

struct KindRow {
  std::string_view kind;
  std::string_view arn_type;
  std::string_view human;
};
constexpr KindRow kKinds[] = {
    {kModel, "model", "model"},
    {kEndpointConfig, "endpoint-config", "endpoint configuration"},
    {kEndpoint, "endpoint", "endpoint"},
    {kInferenceComponent, "inference-component", "inference component"},
};

// TagKey/TagValue: letters, separators and numbers of any script, plus _.:/=+-@. Bytes of
// multi-byte UTF-8 sequences are accepted as letters (a byte test has no \p classes).
bool TagChars(std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80 || std::isalnum(c) || c == ' ') continue;
    if (std::string_view("_.:/=+-@").find(static_cast<char>(c)) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

constexpr std::string_view kTagPattern = "([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*)";

StringRule TagRule(int min_len, int max_len) {
  return PatternRule(min_len, max_len, kTagPattern, &TagChars);
}

}  // namespace

const StringRule kTagKeyRule = TagRule(1, 128);
const StringRule kTagValueRule = TagRule(0, 256);

std::string_view ArnResourceType(std::string_view kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k.arn_type;
  }
  return "";
}

std::string_view HumanName(std::string_view kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k.human;
  }
  return kind;
}

std::string MakeArn(std::string_view region, std::string_view account, std::string_view kind,
                    std::string_view name) {
  return fmt::format("arn:aws:sagemaker:{}:{}:{}/{}", region, account, ArnResourceType(kind), name);
}

std::optional<ParsedArn> ParseArn(std::string_view arn) {
  // arn:aws:sagemaker:<region>:<account>:<type>/<name>
  std::vector<std::string_view> parts;
  size_t pos = 0;
  for (int i = 0; i < 5; ++i) {
    size_t colon = arn.find(':', pos);
    if (colon == std::string_view::npos) return std::nullopt;
    parts.push_back(arn.substr(pos, colon - pos));
    pos = colon + 1;
  }
  std::string_view resource = arn.substr(pos);
  if (parts[0] != "arn" || !parts[1].starts_with("aws") || parts[2] != "sagemaker") {
    return std::nullopt;
  }
  size_t slash = resource.find('/');
  if (slash == std::string_view::npos || slash + 1 == resource.size()) return std::nullopt;
  std::string_view type = resource.substr(0, slash);
  for (const auto& k : kKinds) {
    if (k.arn_type == type) {
      return ParsedArn{std::string(parts[4]), std::string(k.kind),
                       std::string(resource.substr(slash + 1))};
    }
  }
  return std::nullopt;
}

std::optional<nlohmann::json> ValidateTags(Validator& v, const nlohmann::json& parent,
                                           std::string_view member, std::string_view path) {
  const nlohmann::json* list = v.List(parent, member, path, 0, 50, false);
  if (list == nullptr) return std::nullopt;
  const std::string list_path = MemberPath(path, member);
  nlohmann::json out = nlohmann::json::array();
  bool ok = true;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string p = ElementPath(list_path, i);
    auto key = v.String((*list)[i], "Key", p, kTagKeyRule, true);
    auto value = v.String((*list)[i], "Value", p, kTagValueRule, true);
    if (!key || !value) {
      ok = false;
      continue;
    }
    out.push_back({{"Key", *key}, {"Value", *value}});
  }
  if (!ok) return std::nullopt;
  return out;
}

nlohmann::json EpochSeconds(int64_t unix_millis) {
  return static_cast<double>(unix_millis) / 1000.0;
}

}  // namespace carve::server::sagemaker
