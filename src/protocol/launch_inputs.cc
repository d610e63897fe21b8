#include "protocol/launch_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace carve::protocol {
namespace {

namespace fs = std::filesystem;

bool LowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool Alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool Digit(char c) { return c >= '0' && c <= '9'; }
bool Alnum(char c) { return Alpha(c) || Digit(c); }
bool Hex(char c) { return Digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// path-component := [a-z0-9]+ (([._]|__|-+) [a-z0-9]+)*, scanned left to right once.
bool PathComponent(std::string_view s) {
  size_t i = 0;
  if (s.empty() || !LowerAlnum(s[0])) return false;
  while (i < s.size()) {
    while (i < s.size() && LowerAlnum(s[i])) ++i;
    if (i == s.size()) return true;
    if (s[i] == '.') {
      ++i;
    } else if (s[i] == '_') {
      ++i;
      if (i < s.size() && s[i] == '_') ++i;
    } else if (s[i] == '-') {
      while (i < s.size() && s[i] == '-') ++i;
    } else {
      return false;
    }
    if (i == s.size() || !LowerAlnum(s[i])) return false;  // A separator joins two runs.
  }
  return true;
}

// domain-component := [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]
bool DomainComponent(std::string_view s) {
  if (s.empty() || !Alnum(s.front()) || !Alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return Alnum(c) || c == '-'; });
}

// domain := host [":" port]; host := domain-component ("." domain-component)* | "[" ipv6 "]"
bool Domain(std::string_view s) {
  std::string_view host = s;
  std::string_view port;
  if (s.starts_with('[')) {
    const size_t close = s.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    const std::string_view inside = s.substr(1, close - 1);
    if (!std::all_of(inside.begin(), inside.end(), [](char c) { return Hex(c) || c == ':'; })) {
      return false;
    }
    const std::string_view rest = s.substr(close + 1);
    if (rest.empty()) return true;
    if (rest.front() != ':') return false;
    port = rest.substr(1);
    return !port.empty() && std::all_of(port.begin(), port.end(), Digit);
  }
  if (const size_t colon = s.find(':'); colon != std::string_view::npos) {
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
    if (port.empty() || !std::all_of(port.begin(), port.end(), Digit)) return false;
  }
  size_t begin = 0;
  while (true) {
    const size_t dot = host.find('.', begin);
    if (!DomainComponent(host.substr(begin, dot == std::string_view::npos ? dot : dot - begin))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    begin = dot + 1;
  }
}

bool Tag(std::string_view s) {
  if (s.empty() || s.size() > kMaxTagLength) return false;
  if (!Alnum(s[0]) && s[0] != '_') return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return Alnum(c) || c == '_' || c == '.' || c == '-'; });
}

// algorithm ":" hex; algorithm := [A-Za-z][A-Za-z0-9]* ([+._-] [A-Za-z][A-Za-z0-9]*)*
bool Digest(std::string_view s) {
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view algorithm = s.substr(0, colon);
  const std::string_view hex = s.substr(colon + 1);
  bool at_component_start = true;
  for (char c : algorithm) {
    if (at_component_start) {
      if (!Alpha(c)) return false;
      at_component_start = false;
    } else if (c == '+' || c == '.' || c == '_' || c == '-') {
      at_component_start = true;
    } else if (!Alnum(c)) {
      return false;
    }
  }
  if (at_component_start) return false;  // Empty, or ends in a separator.
  if (hex.size() < 32 || !std::all_of(hex.begin(), hex.end(), Hex)) return false;
  if (algorithm == "sha256") {  // OCI image spec: exactly 64 lower-case hex digits.
    return hex.size() == 64 &&
           std::none_of(hex.begin(), hex.end(), [](char c) { return c >= 'A' && c <= 'F'; });
  }
  return true;
}

Error ImageError(std::string_view ref, std::string_view why) {
  return InvalidArgument(
      fmt::format("'{}' is not a valid image: {}; the rule: {}", Preview(ref), why, kImageRule));
}

bool StartsWithAny(std::string_view name, std::span<const std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return name.starts_with(p); });
}

bool EnvironmentName(std::string_view name) {
  if (name.empty() || !(Alpha(name[0]) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return Alnum(c) || c == '_'; });
}

}  // namespace

std::string Preview(std::string_view value) {
  constexpr size_t kShown = 64;
  if (value.size() <= kShown) return std::string(value);
  return fmt::format("{}... ({} characters)", value.substr(0, kShown), value.size());
}

Status CheckImageReference(std::string_view ref) {
  if (ref.size() > kMaxImageLength) {
    return ImageError(
        ref, fmt::format("it has {} characters, more than {}", ref.size(), kMaxImageLength));
  }
  if (ref.empty()) return ImageError(ref, "it is empty");
  if (ref.front() == '-') return ImageError(ref, "it starts with '-', which reads as an option");
  std::string_view rest = ref;
  if (const size_t at = rest.find('@'); at != std::string_view::npos) {
    if (!Digest(rest.substr(at + 1))) {
      return ImageError(ref,
                        "the digest after '@' is not algorithm:hex (sha256: 64 lower-case "
                        "hex digits)");
    }
    rest = rest.substr(0, at);
  }
  const size_t last_slash = rest.rfind('/');
  const size_t last_colon = rest.rfind(':');
  if (last_colon != std::string_view::npos &&
      (last_slash == std::string_view::npos || last_colon > last_slash)) {
    if (!Tag(rest.substr(last_colon + 1))) {
      return ImageError(ref, "the tag after ':' is not [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
    }
    rest = rest.substr(0, last_colon);
  }
  if (rest.size() > kMaxRepositoryNameLength) {
    return ImageError(ref, fmt::format("its name has {} characters, more than {}", rest.size(),
                                       kMaxRepositoryNameLength));
  }
  size_t begin = 0;
  for (int index = 0;; ++index) {
    const size_t slash = rest.find('/', begin);
    const std::string_view part =
        rest.substr(begin, slash == std::string_view::npos ? slash : slash - begin);
    // The first of several components may be a registry host[:port] instead.
    const bool domain = index == 0 && slash != std::string_view::npos && Domain(part);
    if (!domain && !PathComponent(part)) {
      return ImageError(ref, fmt::format("name component '{}' is not lower-case letters and "
                                         "digits joined by '.', '_', '__' or '-'",
                                         Preview(part)));
    }
    if (slash == std::string_view::npos) break;
    begin = slash + 1;
  }
  return OkStatus();
}

bool ReservedEnvironmentName(std::string_view name) {
  if (std::find(std::begin(kAllowedCarveVariables), std::end(kAllowedCarveVariables), name) !=
      std::end(kAllowedCarveVariables)) {
    return false;
  }
  return StartsWithAny(name, kReservedEnvironmentPrefixes) ||
         std::find(std::begin(kReservedEnvironmentNames), std::end(kReservedEnvironmentNames),
                   name) != std::end(kReservedEnvironmentNames);
}

Status CheckEnvironment(const std::map<std::string, std::string>& env, std::string_view field) {
  if (env.size() > kMaxEnvironmentEntries) {
    return InvalidArgument(fmt::format("{} has {} entries; the rule: at most {}", field, env.size(),
                                       kMaxEnvironmentEntries));
  }
  size_t total = 0;
  for (const auto& [name, value] : env) {
    const std::string shown = fmt::format("{}.{}", field, Preview(name));
    if (name.size() > kMaxEnvironmentNameLength || !EnvironmentName(name)) {
      return InvalidArgument(
          fmt::format("{}: the name breaks the rule: [a-zA-Z_][a-zA-Z0-9_]*, at most {} characters",
                      shown, kMaxEnvironmentNameLength));
    }
    if (ReservedEnvironmentName(name)) {
      return InvalidArgument(fmt::format(
          "{}: the name is reserved; the rule: LD_*, NVIDIA_*, CUDA_MPS_*, CUDA_VISIBLE_DEVICES, "
          "PATH, SAGEMAKER_BIND_TO_PORT and CARVE_* (except the runtime inputs listed in "
          "docs/security.md) are set by the loader, the driver or carve, never by a model",
          shown));
    }
    if (value.size() > kMaxEnvironmentValueLength) {
      return InvalidArgument(fmt::format("{}='{}': the rule: a value has at most {} characters",
                                         shown, Preview(value), kMaxEnvironmentValueLength));
    }
    if (value.find_first_of(std::string_view("\0\n\r", 3)) != std::string::npos) {
      return InvalidArgument(fmt::format(
          "{}: the rule: a value holds no NUL or line break (carve passes each variable as "
          "one line of an env file)",
          shown));
    }
    total += name.size() + value.size();
  }
  if (total > kMaxEnvironmentTotalBytes) {
    return InvalidArgument(
        fmt::format("{} has {} bytes of names and values; the rule: at most {} in all", field,
                    total, kMaxEnvironmentTotalBytes));
  }
  return OkStatus();
}

bool IsLocalModelData(std::string_view url) {
  return url.starts_with("file:") || url.starts_with('/');
}

Result<std::string> ResolveModelData(std::string_view url, std::span<const std::string> roots,
                                     bool must_exist) {
  std::string_view path = url;
  if (path.starts_with("file://")) path.remove_prefix(7);
  auto refuse = [&](std::string_view why) -> Error {
    std::string listed;
    for (const auto& r : roots) listed += (listed.empty() ? "" : ", ") + r;
    return InvalidArgument(fmt::format("'{}' {}; model roots: [{}]; the rule: {}", Preview(url),
                                       why, listed, kModelRootRule));
  };
  if (!path.starts_with('/')) return refuse("is not an absolute path");
  // ':' would end the host path of a -v HOST:CONTAINER:OPTIONS mount.
  if (path.find(':') != std::string_view::npos) return refuse("holds ':'");
  if (path.find('\0') != std::string_view::npos) return refuse("holds a NUL byte");
  if (roots.empty()) return refuse("cannot be used: no model root is configured");
  auto resolve = [&](const fs::path& p, std::error_code& ec) {
    return must_exist ? fs::canonical(p, ec) : fs::weakly_canonical(p, ec);
  };
  std::error_code ec;
  const fs::path resolved = resolve(fs::path(path), ec);
  if (ec) return refuse(fmt::format("cannot be resolved: {}", ec.message()));
  if (resolved.string().find(':') != std::string::npos) {  // A symlink's target may hold one.
    return refuse(fmt::format("resolves to {}, which holds ':'", resolved.string()));
  }
  for (const auto& root : roots) {
    std::error_code root_ec;
    const fs::path r = resolve(fs::path(root), root_ec);
    if (root_ec || r.empty()) continue;
    // Inside: every component of the root leads the resolved path (not a string prefix, so
    // /models-other is not inside /models).
    auto [root_end, unused] = std::mismatch(r.begin(), r.end(), resolved.begin(), resolved.end());
    if (root_end == r.end() || (std::next(root_end) == r.end() && root_end->empty())) {
      return resolved.string();
    }
  }
  return refuse(fmt::format("resolves to {}, outside every model root", resolved.string()));
}

}  // namespace carve::protocol
