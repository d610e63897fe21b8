// Agent protocol messages (src/protocol/agent_protocol.h): the server parses what any agent
// holding credentials sends (registrations, heartbeats, status reports), and the agent parses
// the server's replies and desired states. Input: JSON text, parsed as both sides parse it
// (carve::ParseJson) and then as every message type.
// Properties, beyond "no crash, no leak, no UB, no exception escaping":
//  - whatever a FromJson accepts, ToJson writes back as JSON that the same FromJson accepts
//    and writes out identically (the agent and the server never disagree about a message the
//    other produced).
#include <nlohmann/json.hpp>
#include <string>

#include "common/bounded_json.h"
#include "fuzz_util.h"
#include "protocol/agent_protocol.h"

namespace {

namespace protocol = carve::protocol;

template <typename FromJson>
void CheckRoundTrip(const nlohmann::json& j, FromJson from_json, const char* type) {
  auto v = from_json(j);
  if (!v) return;
  const nlohmann::json written = protocol::ToJson(*v);
  auto again = from_json(nlohmann::json::parse(written.dump()));
  FUZZ_CHECK(again.has_value(), "%s: ToJson output is refused: %s\n%s", type,
             again.error().message.c_str(), written.dump().c_str());
  FUZZ_CHECK(protocol::ToJson(*again) == written, "%s changed on a round trip:\n%s\n%s", type,
             written.dump().c_str(), protocol::ToJson(*again).dump().c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As the server's agent routes and the agent's SignedClient read a message: bounded nesting,
  // no repeated keys (common/bounded_json.h).
  const auto parsed = carve::ParseJson(carve::fuzz::AsView(data, size));
  if (!parsed.has_value()) return 0;
  const nlohmann::json& j = *parsed;
  CheckRoundTrip(j, protocol::RegistrationFromJson, "Registration");
  CheckRoundTrip(j, protocol::RegisterReplyFromJson, "RegisterReply");
  CheckRoundTrip(j, protocol::DesiredStateFromJson, "DesiredState");
  CheckRoundTrip(j, protocol::StatusReportFromJson, "StatusReport");
  CheckRoundTrip(j, protocol::StatusReplyFromJson, "StatusReply");
  CheckRoundTrip(j, protocol::HeartbeatFromJson, "Heartbeat");
  CheckRoundTrip(j, protocol::HeartbeatReplyFromJson, "HeartbeatReply");
  return 0;
}
