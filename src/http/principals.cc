#include "http/principals.h"

#include <array>
#include <utility>

namespace carve::http {

std::string Principals::Names() const {
  static constexpr std::array<std::pair<Principal, const char*>, 6> kNames{{
      {Principal::kAnonymous, "anonymous"},
      {Principal::kTenant, "tenant"},
      {Principal::kNode, "node"},
      {Principal::kOperator, "operator"},
      {Principal::kScraper, "scraper"},
      {Principal::kJoiner, "joiner"},
  }};
  std::string out;
  for (const auto& [p, name] : kNames) {
    if (!Has(p)) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out.empty() ? "nobody" : out;
}

}  // namespace carve::http
