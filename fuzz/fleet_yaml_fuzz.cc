// The fleet section of the server's --config YAML (src/app/fleet_config.h). Properties,
// beyond "no crash, no leak, no UB, no hang, no exception escaping":
//  - an accepted fleet has unique node names, and each node is claimable or refused with a
//    reason (NodeClaims::Upsert, as the server builds its simulated fleet);
//  - written back as YAML (every node named), it parses to the same nodes and carve time.
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>

#include "app/fleet_config.h"
#include "fuzz_util.h"
#include "server/nodes/node_claims.h"

namespace {

namespace fleet = carve::app;

std::string Write(const fleet::FleetConfig& config) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "fleet" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "carve_time_ms" << YAML::Value << config.carve_time_per_gpu.count();
  out << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq;
  for (const fleet::NodeSpec& n : config.nodes) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted
        << n.id.value() << YAML::Key << "instance_type" << YAML::Value << YAML::DoubleQuoted
        << n.instance_type << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str(), out.size());  // the text may hold NUL bytes
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config = fleet::ParseFleetConfig(carve::fuzz::AsView(data, size));
  if (!config) return 0;
  std::set<std::string> names;
  for (const fleet::NodeSpec& n : config->nodes) {
    FUZZ_CHECK(names.insert(n.id.value()).second, "node name '%s' accepted twice",
               n.id.value().c_str());
  }
  carve::server::nodes::NodeClaims claims;
  for (const fleet::NodeSpec& n : config->nodes) (void)claims.Upsert(n.id, n.instance_type, true);
  // Writing every node back as a named entry and parsing that is the slow part (seconds for
  // thousands under the fuzzer's instrumentation, past its timeout near the 10,000-node cap);
  // the round trip's property does not depend on the size, so large fleets stop here.
  if (config->nodes.size() > 1000) return 0;
  const std::string written = Write(*config);
  auto again = fleet::ParseFleetConfig(written);
  FUZZ_CHECK(again.has_value(), "the fleet written back is refused: %s\n%s",
             again.error().message.c_str(), written.c_str());
  FUZZ_CHECK(
      again->nodes == config->nodes && again->carve_time_per_gpu == config->carve_time_per_gpu,
      "the fleet changed on a round trip:\n%s", written.c_str());
  return 0;
}
