// CopyDirectory: how the runtime router learns where an endpoint's model copies run. The
// SageMaker service implements it from its endpoint and inference-component records; tests use
// FakeCopyDirectory.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/result.h"

namespace carve::runtime {

struct CopyTarget {
  std::string id;
  std::string address;
};  // address "127.0.0.1:PORT"
// How a request picks among a component's copies (the variant's RoutingStrategy).
enum class Strategy { kLeastOutstandingRequests, kRandom };

struct RouteInfo {
  std::string variant;    // x-Amzn-Invoked-Production-Variant
  std::string component;  // resolved component name ("" when none)
  Strategy strategy = Strategy::kLeastOutstandingRequests;
  std::chrono::milliseconds timeout{60000};
  std::vector<CopyTarget> copies;  // copies in rotation (running + healthy) only
};
// What an empty component name means on an endpoint that hosts components.
enum class Unnamed {
  kRefused,           // InvokeEndpoint: SageMaker requires the component header.
  kTheOnlyComponent,  // The OpenAI route: the endpoint's only component, if it has one.
};

class CopyDirectory {
 public:
  virtual ~CopyDirectory() = default;
  // NotFound: endpoint unknown for this account (message names it). InvalidArgument: the
  // endpoint has components and `component` is empty (unless `unnamed` is kTheOnlyComponent
  // and it has exactly one), or names no component of the endpoint (message as SageMaker words
  // it). FailedPrecondition: endpoint not InService.
  virtual Result<RouteInfo> Resolve(const std::string& account, const std::string& endpoint,
                                    const std::string& component, Unnamed unnamed) = 0;
};

}  // namespace carve::runtime
