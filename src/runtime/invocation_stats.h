// InvocationStats: what the router saw per (account, endpoint, component), for the scaling
// policies that read it (src/server/autoscaling): invocations started, invocations that found no
// copy in service (SageMaker's NoCapacityInvocationFailures), and requests in flight. Monotonic
// totals, read by sampling; thread-safe.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace carve::runtime {

class InvocationStats {
 public:
  struct Key {
    std::string account;
    std::string endpoint;
    std::string component;  // "" for an endpoint without components.
    friend auto operator<=>(const Key&, const Key&) = default;
  };
  struct Totals {
    uint64_t invocations = 0;
    uint64_t no_capacity = 0;
    int64_t in_flight = 0;
  };

  void Started(const Key& key);
  void Finished(const Key& key);
  void NoCapacity(const Key& key);
  Totals Get(const Key& key) const;  // Zeros for a key never seen.
  // The sum over every component of one endpoint.
  Totals EndpointTotals(const std::string& account, const std::string& endpoint) const;

 private:
  mutable std::mutex mu_;
  std::map<Key, Totals> totals_;
};

}  // namespace carve::runtime
