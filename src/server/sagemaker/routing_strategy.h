// A variant's RoutingConfig.RoutingStrategy: how InvokeEndpoint picks one of a component's copies.
// Validated and parsed once, by the operation that names it; the router reads the value.
#pragma once

#include <array>
#include <string_view>

#include "common/enum_names.h"

namespace carve::server::sagemaker {

enum class RoutingStrategy { kLeastOutstandingRequests, kRandom };

}  // namespace carve::server::sagemaker

namespace carve {
template <>
struct EnumNames<server::sagemaker::RoutingStrategy> {
  static constexpr std::array<std::string_view, 2> kNames = {"LEAST_OUTSTANDING_REQUESTS",
                                                             "RANDOM"};
};
}  // namespace carve
