#include "catalog/driver_version.h"

#include <charconv>
#include <fmt/format.h>
#include <vector>

namespace carve::catalog {
namespace {

Error BadVersion(std::string_view text) {
  return InvalidArgument(fmt::format(
      "driver version '{}' is not a version: expected MAJOR.MINOR.PATCH (525.60.13), "
      "MAJOR.MINOR or a branch (R525)",
      text));
}

}  // namespace

Result<DriverVersion> DriverVersion::Parse(std::string_view text) {
  std::string_view rest = text;
  if (!rest.empty() && (rest.front() == 'R' || rest.front() == 'r')) rest.remove_prefix(1);
  std::vector<int> parts;
  while (true) {
    int value = 0;
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (ec != std::errc() || value < 0 || ptr == rest.data()) return BadVersion(text);
    parts.push_back(value);
    rest.remove_prefix(static_cast<size_t>(ptr - rest.data()));
    if (rest.empty()) break;
    if (rest.front() != '.' || parts.size() == 3) return BadVersion(text);
    rest.remove_prefix(1);
  }
  DriverVersion v;
  v.major = parts[0];
  if (parts.size() > 1) v.minor = parts[1];
  if (parts.size() > 2) v.patch = parts[2];
  return v;
}

std::string DriverVersion::ToString() const {
  if (minor == 0 && patch == 0) return fmt::format("R{}", major);
  if (patch == 0) return fmt::format("{}.{:02}", major, minor);
  return fmt::format("{}.{:02}.{:02}", major, minor, patch);
}

}  // namespace carve::catalog
