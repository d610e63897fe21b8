// FleetConfig: which nodes the control plane manages and how the simulated driver behaves.
//
// With no configuration the server runs the embedded default fleet (2 x ml.p4d.24xlarge,
// 1 x ml.p5.48xlarge and 1 x ml.g5.48xlarge), each node run by `carve server`'s embedded agent
// with simulated GPUs. A YAML file's `fleet:` section describes another one:
//
//   fleet:
//     carve_time_ms: 500          # per GPU, simulated driver
//     nodes:
//       - instance_type: ml.p4d.24xlarge
//         count: 2                # names p4d.24xlarge-0, p4d.24xlarge-1
//       - instance_type: ml.p5.48xlarge
//         name: big-h100          # one node with an explicit name
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/result.h"

namespace carve::app {

struct NodeSpec {
  NodeId id;
  std::string instance_type;  // "ml.p4d.24xlarge"; checked against the catalog by Fleet.
  friend bool operator==(const NodeSpec&, const NodeSpec&) = default;
};

struct FleetConfig {
  std::vector<NodeSpec> nodes;
  std::chrono::milliseconds carve_time_per_gpu{2000};
};

// 2 x ml.p4d.24xlarge + 1 x ml.p5.48xlarge, 2 s per GPU.
FleetConfig DefaultFleetConfig();

// The most nodes a fleet config may list: each runs an embedded agent in the server process. A
// larger simulated fleet is `carve fleet-sim`'s agents against a server (docs/fleet-scale.md).
inline constexpr int kMaxFleetConfigNodes = 10'000;

// Parses YAML text. A document without a `fleet:` section gives the default fleet. Errors are
// InvalidArgument naming the key and value (e.g. "fleet.nodes[1].count: -1 must be >= 1").
// Node names must be unique; at most kMaxFleetConfigNodes nodes in all.
Result<FleetConfig> ParseFleetConfig(std::string_view yaml_text);

// Reads and parses a file; NotFound when it cannot be read.
Result<FleetConfig> LoadFleetConfig(const std::string& path);

}  // namespace carve::app
