// FakeCopyDirectory: an in-memory CopyDirectory for router tests. Endpoints are keyed by
// (account, endpoint); an endpoint either has named components or one component-less route.
// Resolve follows the CopyDirectory contract with SageMaker's wording; SetError makes an
// endpoint fail with a given error instead. Thread-safe, so tests may change copies while
// requests run.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "runtime/copy_directory.h"

namespace carve::runtime {

class FakeCopyDirectory final : public CopyDirectory {
 public:
  // component "" declares an endpoint without components.
  void SetRoute(const std::string& account, const std::string& endpoint, RouteInfo route) {
    std::lock_guard lock(mu_);
    endpoints_[{account, endpoint}].routes[route.component] = std::move(route);
  }
  void SetError(const std::string& account, const std::string& endpoint, Error error) {
    std::lock_guard lock(mu_);
    endpoints_[{account, endpoint}].error = std::move(error);
  }
  int resolve_calls() const {
    std::lock_guard lock(mu_);
    return resolve_calls_;
  }

  Result<RouteInfo> Resolve(const std::string& account, const std::string& endpoint,
                            const std::string& component, Unnamed unnamed) override {
    std::lock_guard lock(mu_);
    ++resolve_calls_;
    auto it = endpoints_.find({account, endpoint});
    if (it == endpoints_.end()) {
      return NotFound("Endpoint " + endpoint + " of account " + account + " not found.");
    }
    const Entry& e = it->second;
    if (e.error) return *e.error;
    auto plain = e.routes.find("");
    if (plain != e.routes.end()) return plain->second;
    if (component.empty() && unnamed == Unnamed::kTheOnlyComponent && e.routes.size() == 1) {
      return e.routes.begin()->second;
    }
    if (component.empty()) {
      return InvalidArgument(
          "Inference Component Name header is required for endpoints to which you plan to "
          "deploy inference components. Please include Inference Component Name header or "
          "consider using SageMaker models.");
    }
    auto r = e.routes.find(component);
    if (r == e.routes.end()) {
      return InvalidArgument("Inference Component " + component + " not found in endpoint " +
                             endpoint + ".");
    }
    return r->second;
  }

 private:
  struct Entry {
    std::map<std::string, RouteInfo> routes;  // By component; "" for no components.
    std::optional<Error> error;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Entry> endpoints_;  // Guarded by mu_.
  int resolve_calls_ = 0;                                           // Guarded by mu_.
};

}  // namespace carve::runtime
