// EndpointRecord: the body of an Endpoint record in the Store. It copies the endpoint config's
// variants at CreateEndpoint (so deleting the config later does not matter) and records which
// fleet nodes each variant holds, which is how a restarted server finds its claims again.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/sagemaker/statuses.h"
#include "server/sagemaker/variant.h"
#include "store/store.h"

namespace carve::server::sagemaker {

struct EndpointRecord {
  std::string name;
  std::string config_name;
  EndpointStatus status = EndpointStatus::kCreating;
  std::string failure_reason;
  std::vector<VariantSpec> variants;
  nlohmann::json tags = nlohmann::json::array();
  int64_t status_since_ms = 0;

  nlohmann::json ToJson() const;
  // Internal when the stored body is malformed.
  static Result<EndpointRecord> FromRecord(const store::Record& record);
};

// A record and its parsed body, read once per reconcile pass.
struct EndpointEntry {
  store::Record record;
  EndpointRecord endpoint;
};

// Rewrites, once, the endpoint records written before issue 13 (their variants kept no layout;
// VariantFromJson placed it on load), so every later read finds the layout in the record.
Status MigrateEndpoints(store::Store& store, std::vector<EndpointEntry>& endpoints);

// "a, b, c"; past kJoinedNodes names, "a, b, ... and 12 more", so that a status message about a
// large fleet stays readable and inside the wire's 1024 characters.
inline constexpr size_t kJoinedNodes = 10;
std::string JoinNodes(const std::vector<std::string>& names);

}  // namespace carve::server::sagemaker
