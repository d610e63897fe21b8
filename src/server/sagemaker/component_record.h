// ComponentRecord: the body of an InferenceComponent record in the Store: the specification as
// the user gave it, the requirements derived from it, the desired copy count, and where each
// running copy sits (persisted so a restart finds every partition's occupant).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/fleet/fleet.h"
#include "store/store.h"

namespace carve::server::sagemaker {

struct ComponentRecord {
  std::string name;
  std::string endpoint;
  std::string variant;
  nlohmann::json specification = nlohmann::json::object();
  std::string partition_type;  // "" for whole GPUs.
  int devices = 1;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  fleet::PlacementStrategy strategy = fleet::PlacementStrategy::kSpread;
  int desired = 0;
  std::vector<fleet::CopyPlacement> copies;
  // Copies that serve (agent mode: their process answers /ping; simulated mode: placed). This
  // is DescribeInferenceComponent's CurrentCopyCount.
  int running = 0;
  std::string status;          // InferenceComponentStatus.
  std::string status_message;  // What waiting copies wait for; "" when none wait.
  std::string failure_reason;  // Set with status Failed (its endpoint failed).
  bool ever_in_service = false;
  nlohmann::json tags = nlohmann::json::array();

  nlohmann::json ToJson() const;
  static Result<ComponentRecord> FromRecord(const store::Record& record);
  // The fleet's occupant id for this component's copies.
  static std::string Occupant(const std::string& account, const std::string& name) {
    return account + "/" + name;
  }
  // The id of a copy's process on its node's agent.
  static std::string WorkloadId(const std::string& account, const std::string& name,
                                const fleet::CopyPlacement& copy) {
    return account + "/" + name + "/" + copy.id;
  }
};

}  // namespace carve::server::sagemaker
