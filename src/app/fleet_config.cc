#include "app/fleet_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "common/utf8.h"
#include "common/yaml_text.h"

namespace carve::app {
namespace {

// "ml.p4d.24xlarge" -> "p4d.24xlarge".
std::string NodePrefix(const std::string& instance_type) {
  constexpr std::string_view kMl = "ml.";
  if (instance_type.starts_with(kMl)) return instance_type.substr(kMl.size());
  return instance_type;
}

void AddNodes(FleetConfig& config, const std::string& instance_type, int count) {
  int existing = 0;
  for (const auto& n : config.nodes) existing += n.instance_type == instance_type ? 1 : 0;
  for (int i = 0; i < count; ++i) {
    config.nodes.push_back(
        {NodeId(fmt::format("{}-{}", NodePrefix(instance_type), existing + i)), instance_type});
  }
}

Result<FleetConfig> ParseFleetNode(const YAML::Node& fleet) {
  FleetConfig config;
  if (auto t = fleet["carve_time_ms"]) {
    int64_t ms = t.as<int64_t>();
    if (ms < 0) {
      return InvalidArgument(fmt::format("fleet.carve_time_ms: {} must be >= 0", ms));
    }
    config.carve_time_per_gpu = std::chrono::milliseconds(ms);
  }
  YAML::Node nodes = fleet["nodes"];
  if (!nodes) {
    config.nodes = DefaultFleetConfig().nodes;
    return config;
  }
  if (!nodes.IsSequence()) return InvalidArgument("fleet.nodes: must be a list");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const YAML::Node& n = nodes[i];
    if (!n["instance_type"]) {
      return InvalidArgument(fmt::format("fleet.nodes[{}].instance_type: required", i));
    }
    CARVE_ASSIGN_OR_RETURN(
        const std::string type,
        YamlText(n["instance_type"], fmt::format("fleet.nodes[{}].instance_type", i)));
    if (n["name"]) {
      if (n["count"] && n["count"].as<int>() != 1) {
        return InvalidArgument(
            fmt::format("fleet.nodes[{}]: name and count {} conflict; a named entry is one node", i,
                        n["count"].as<int>()));
      }
      CARVE_ASSIGN_OR_RETURN(auto name,
                             YamlText(n["name"], fmt::format("fleet.nodes[{}].name", i)));
      if (static_cast<int>(config.nodes.size()) >= kMaxFleetConfigNodes) {
        return InvalidArgument(fmt::format("fleet.nodes[{}]: the fleet would be more than {} nodes",
                                           i, kMaxFleetConfigNodes));
      }
      config.nodes.push_back({NodeId(std::move(name)), type});
      continue;
    }
    int count = n["count"] ? n["count"].as<int>() : 1;
    if (count < 1) {
      return InvalidArgument(fmt::format("fleet.nodes[{}].count: {} must be >= 1", i, count));
    }
    // Checked before the nodes are made: the fuzz target fleet_yaml found a count of 6,999,941
    // taking more than 25 s and 2 GiB here.
    if (count > kMaxFleetConfigNodes - static_cast<int>(config.nodes.size())) {
      return InvalidArgument(fmt::format(
          "fleet.nodes[{}].count: {} would make the fleet more than {} nodes, the most a config "
          "lists (each runs an agent in the server); simulate more with carve fleet-sim",
          i, count, kMaxFleetConfigNodes));
    }
    AddNodes(config, type, count);
  }
  std::set<std::string> names;
  for (const auto& n : config.nodes) {
    if (!names.insert(n.id.value()).second) {
      return InvalidArgument(
          fmt::format("fleet.nodes: node name '{}' is used twice", n.id.value()));
    }
  }
  return config;
}

}  // namespace

FleetConfig DefaultFleetConfig() {
  FleetConfig config;
  AddNodes(config, "ml.p4d.24xlarge", 2);
  AddNodes(config, "ml.p5.48xlarge", 1);
  AddNodes(config, "ml.g5.48xlarge", 1);  // 8 x A10G, for mGPU queues.
  return config;
}

Result<FleetConfig> ParseFleetConfig(std::string_view yaml_text) {
  // Node names go into JSON records, whose serializer throws on invalid UTF-8; YAML allows no
  // control characters (yaml-cpp reads a NUL as the end of the text).
  if (auto bad = FirstNonTextByte(yaml_text)) {
    return InvalidArgument(fmt::format("fleet config: byte {} is not UTF-8 text", *bad));
  }
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    if (!root || root.IsNull() || !root["fleet"]) return DefaultFleetConfig();
    return ParseFleetNode(root["fleet"]);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("fleet config: {}", e.what()));
  }
}

Result<FleetConfig> LoadFleetConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(fmt::format("cannot read config file '{}'", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseFleetConfig(ss.str());
}

}  // namespace carve::app
