// OpContext: what the SageMaker operation handlers may touch. Handlers validate a request and
// record what is wanted in the Store; the reconciler's parts (endpoint lifecycle, component
// placement, workload publishing) do the work. So a handler needs only the Store, the clock, the
// lock that serialises endpoint and component changes with the reconciler, a way to wake it, and
// (for DescribeEndpoint's lost instances) the node registry.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "server/nodes/node_registry.h"
#include "store/store.h"

namespace carve::server::sagemaker {

// Records of each kind (models, endpoint configurations, endpoints, inference components) one
// account may hold unless configured otherwise (docs/api.md, Limits).
inline constexpr int kDefaultMaxRecordsPerKind = 1000;

class OpContext {
 public:
  OpContext(store::Store& store, const Clock& clock, std::string region, std::mutex& state_mu,
            std::function<void()> notify, nodes::NodeRegistry* registry,
            int max_records_per_kind = kDefaultMaxRecordsPerKind,
            std::vector<std::string> model_roots = {})
      : store_(store),
        clock_(clock),
        region_(std::move(region)),
        state_mu_(state_mu),
        notify_(std::move(notify)),
        registry_(registry),
        max_records_per_kind_(max_records_per_kind),
        model_roots_(std::move(model_roots)) {}

  store::Store& store() const { return store_; }
  const Clock& clock() const { return clock_; }
  const std::string& region() const { return region_; }
  // Held while a handler changes an endpoint or a component, and by every reconcile pass.
  std::mutex& state_mu() const { return state_mu_; }
  // Wakes the reconciler: something it acts on changed.
  void Notify() const { notify_(); }
  nodes::NodeRegistry* registry() const { return registry_; }
  // Where a file:// ModelDataUrl may point (ServiceOptions::model_roots).
  const std::vector<std::string>& model_roots() const { return model_roots_; }

  std::string Arn(std::string_view account, std::string_view kind, std::string_view name) const;
  // The record, or NotFound worded as the service does: Could not find endpoint "arn:...".
  Result<store::Record> Get(const std::string& account, std::string_view kind,
                            const std::string& name) const;
  // Cannot create already existing endpoint "arn:...".
  Error AlreadyExists(std::string_view account, std::string_view kind, std::string_view name) const;
  // Before a Create: ResourceExhausted (400 ResourceLimitExceeded) when `account` already holds
  // max_records_per_kind records of `kind`, so one account cannot grow the store without bound.
  // Creates racing past the check may each land, exceeding the cap by at most their number.
  Status CheckRoomFor(const std::string& account, std::string_view kind) const;

 private:
  store::Store& store_;
  const Clock& clock_;
  const std::string region_;
  std::mutex& state_mu_;
  const std::function<void()> notify_;
  nodes::NodeRegistry* const registry_;
  const int max_records_per_kind_;
  const std::vector<std::string> model_roots_;
};

}  // namespace carve::server::sagemaker
