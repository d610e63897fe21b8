#include "agent/mps/enforcement.h"

#include <string>

namespace carve::agent::mps {

Result<Enforcement> ParseEnforcement(std::string_view text) {
  if (text.empty() || text == "interposer") return Enforcement::kInterposer;
  if (text == "mps") return Enforcement::kMps;
  if (text == "none") return Enforcement::kNone;
  return InvalidArgument("enforcement '" + std::string(text) +
                         "' is not one of 'interposer' (the default), 'mps' or 'none'");
}

std::string_view EnforcementName(Enforcement e) {
  switch (e) {
    case Enforcement::kInterposer:
      return "interposer";
    case Enforcement::kMps:
      return "mps";
    case Enforcement::kNone:
      return "none";
  }
  return "interposer";
}

}  // namespace carve::agent::mps
