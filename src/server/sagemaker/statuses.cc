#include "server/sagemaker/statuses.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <string>

namespace carve::server::sagemaker {
namespace {

constexpr std::array<std::string_view, 9> kEndpointNames = {
    "OutOfService", "Creating", "Updating", "SystemUpdating",      "RollingBack",
    "InService",    "Deleting", "Failed",   "UpdateRollbackFailed"};
constexpr std::array<std::string_view, 5> kComponentNames = {"InService", "Creating", "Updating",
                                                             "Failed", "Deleting"};

template <typename E, size_t N>
Result<E> Parse(std::string_view text, const std::array<std::string_view, N>& names,
                std::string_view what) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<E>(i);
  }
  return InvalidArgument(
      fmt::format("{} '{}' is not one of [{}]", what, std::string(text), fmt::join(names, ", ")));
}

}  // namespace

std::string_view Name(EndpointStatus status) { return kEndpointNames[static_cast<size_t>(status)]; }

std::string_view Name(ComponentStatus status) {
  return kComponentNames[static_cast<size_t>(status)];
}

std::span<const std::string_view> EndpointStatusNames() { return kEndpointNames; }
std::span<const std::string_view> ComponentStatusNames() { return kComponentNames; }

Result<EndpointStatus> ParseEndpointStatus(std::string_view text) {
  return Parse<EndpointStatus>(text, kEndpointNames, "EndpointStatus");
}

Result<ComponentStatus> ParseComponentStatus(std::string_view text) {
  return Parse<ComponentStatus>(text, kComponentNames, "InferenceComponentStatus");
}

}  // namespace carve::server::sagemaker
