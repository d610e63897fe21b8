// DriverVersion: an NVIDIA driver version such as 525.60.13, comparable and parseable.
#pragma once

#include <compare>
#include <string>
#include <string_view>

#include "common/result.h"

namespace carve::catalog {

struct DriverVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;

  // True for the zero version, which tables use for "no minimum".
  constexpr bool IsUnset() const { return major == 0 && minor == 0 && patch == 0; }
  friend constexpr auto operator<=>(const DriverVersion&, const DriverVersion&) = default;

  // "525.60.13" (full), "525.60" or "R525"/"525" (branch only; minor and patch are 0).
  // InvalidArgument names the text and the accepted forms.
  static Result<DriverVersion> Parse(std::string_view text);
  // "525.60.13"; a branch-only version prints as "R525".
  std::string ToString() const;
};

}  // namespace carve::catalog
