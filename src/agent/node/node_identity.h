// Who this node is: its instance type (given, or derived from the GPUs found), the simulated
// GPU configuration for an instance type, and the Registration the agent sends.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "agent/mig/discovery.h"
#include "catalog/gpu_model.h"
#include "common/result.h"
#include "protocol/agent_protocol.h"

namespace carve::agent::node {

// The catalog instance type carrying exactly these GPUs: all of one model, as many as the type
// has (8 x A100-40GB -> "ml.p4d.24xlarge"). When several types carry the same GPUs (ml.g5.xlarge
// .. ml.g5.16xlarge each have one A10G), the one with the most vCPUs not above `host_vcpus`
// wins, else the smallest; among equals, one with a known price. InvalidArgument naming the
// GPUs found when none matches (mixed models, an uncatalogued GPU, an odd count) or no GPU.
Result<std::string> DeriveInstanceType(std::span<const catalog::GpuModel* const> gpus,
                                       int host_vcpus);

// The FakeNodeConfig text of a catalog instance type: "gpus: 8 x a100-40gb".
// NotFound (listing the types) for an unknown type.
Result<std::string> SimConfigFor(std::string_view instance_type);

struct NodeFacts {
  std::string node_id;
  std::string instance_type;
  std::string driver;  // "nvml" or "sim"
  std::string hostname;
  std::string data_dir;
};

// The registration for a discovered node: one GpuInventory per GPU, and one catalog_diffs line
// per catalog difference ("gpu 0 3g.20gb placements: catalog {0,4}, live {4}: ..."). The driver
// version is omitted for the sim driver.
protocol::Registration BuildRegistration(const NodeFacts& facts, const NodeInventory& inventory);

}  // namespace carve::agent::node
