// Principals: who calls carve, and which of them each route serves (docs/security.md).
//
// carve has six kinds of caller. Every route is registered with the set it serves (an Access);
// HttpServer refuses any other caller before the handler runs, and refuses to start with a
// route registered for nobody, so a new route cannot ship open by accident.
//
//   kAnonymous  no credential at all: /ping and the dashboard's static files.
//   kTenant     an account's key from <data-dir>/credentials (SigV4), or on the OpenAI route the
//               bearer token minted for one of its endpoints. It sees only its own account.
//   kOperator   a key whose credentials section says `carve_role = operator`. An operator's key
//               is also a tenant of its own account.
//   kNode       a node agent, on /v1/agent/*: the bearer node credential it got by joining
//               (nodes/node_identity.h), bound to one node id. No account's key speaks for a node.
//   kJoiner     the holder of an operator's bootstrap token, on POST /v1/agent/join only: it
//               trades the token for a node credential.
//   kScraper    the scrape token (<data-dir>/scrape-token) that Prometheus sends as
//               `Authorization: Bearer`, on GET /metrics only.
#pragma once

#include <cstdint>
#include <string>

namespace carve::http {

enum class Principal : uint8_t {
  kAnonymous = 1 << 0,
  kTenant = 1 << 1,
  kNode = 1 << 2,
  kOperator = 1 << 3,
  kScraper = 1 << 4,
  kJoiner = 1 << 5,
};

// A set of principals: what a route serves, or what one caller is.
class Principals {
 public:
  constexpr Principals() = default;
  constexpr Principals(Principal p) : bits_(static_cast<uint8_t>(p)) {}  // NOLINT: a set of one.

  constexpr Principals operator|(Principals other) const { return FromBits(bits_ | other.bits_); }
  constexpr bool Has(Principal p) const { return (bits_ & static_cast<uint8_t>(p)) != 0; }
  constexpr bool Overlaps(Principals other) const { return (bits_ & other.bits_) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr bool operator==(const Principals&) const = default;

  // "tenant, operator": the names in the order of the enum; "nobody" when empty.
  std::string Names() const;

 private:
  static constexpr Principals FromBits(unsigned bits) {
    Principals p;
    p.bits_ = static_cast<uint8_t>(bits);
    return p;
  }
  uint8_t bits_ = 0;
};

constexpr Principals operator|(Principal a, Principal b) { return Principals(a) | b; }

// Which principals a route serves, and how a tenant may prove itself there.
struct Access {
  Principals serves;
  // The OpenAI-compatible route: a tenant may present the bearer token minted for the endpoint
  // instead of a signature, and every refusal is in OpenAI's error shape.
  bool endpoint_tokens = false;
};

inline constexpr Access kForTenants{Principal::kTenant};
inline constexpr Access kForOperators{Principal::kOperator};
inline constexpr Access kForAnyone{Principal::kAnonymous};
// The agent protocol (/v1/agent/*): node agents, each with its own credential.
inline constexpr Access kForNodes{Principal::kNode};
// POST /v1/agent/join: an agent with a bootstrap token, before it has a node credential.
inline constexpr Access kForJoiners{Principal::kJoiner};

}  // namespace carve::http
