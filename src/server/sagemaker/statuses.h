// The lifecycle states of endpoints and inference components, as typed values. The wire and the
// Store spell them as SageMaker does ("InService"); nothing else compares status strings.
#pragma once

#include <span>
#include <string_view>

#include "common/result.h"

namespace carve::server::sagemaker {

enum class EndpointStatus {
  kOutOfService,
  kCreating,
  kUpdating,
  kSystemUpdating,
  kRollingBack,
  kInService,
  kDeleting,
  kFailed,
  kUpdateRollbackFailed,
};

enum class ComponentStatus { kInService, kCreating, kUpdating, kFailed, kDeleting };

std::string_view Name(EndpointStatus status);
std::string_view Name(ComponentStatus status);
// Every value's name, in the order of the enum (the modeled enum of the List filters).
std::span<const std::string_view> EndpointStatusNames();
std::span<const std::string_view> ComponentStatusNames();
// InvalidArgument names the value and the accepted ones.
Result<EndpointStatus> ParseEndpointStatus(std::string_view text);
Result<ComponentStatus> ParseComponentStatus(std::string_view text);

// The endpoint's instances are carved and its variants can host copies.
inline bool IsCarved(EndpointStatus s) {
  return s == EndpointStatus::kInService || s == EndpointStatus::kUpdating;
}

}  // namespace carve::server::sagemaker
