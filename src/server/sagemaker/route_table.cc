#include "server/sagemaker/route_table.h"

#include <fmt/format.h>

#include <mutex>

namespace carve::server::sagemaker {

void RouteTable::Replace(std::map<Key, RouteEndpoint> table) {
  std::unique_lock lock(mu_);
  table_ = std::move(table);
}

void RouteTable::Set(const Key& key, RouteEndpoint endpoint) {
  std::unique_lock lock(mu_);
  table_.insert_or_assign(key, std::move(endpoint));
}

void RouteTable::Erase(const Key& key) {
  std::unique_lock lock(mu_);
  table_.erase(key);
}

Result<ResolvedRoute> RouteTable::Resolve(const std::string& account, const std::string& endpoint,
                                          const std::string& component,
                                          bool sole_if_unnamed) const {
  std::shared_lock lock(mu_);
  auto it = table_.find({account, endpoint});
  if (it == table_.end()) {
    return NotFound(fmt::format("Endpoint {} of account {} not found.", endpoint, account));
  }
  const RouteEndpoint& e = it->second;
  if (!IsCarved(e.status)) {
    return FailedPrecondition(fmt::format(
        "Endpoint {} is not ready for invocations: its status is {}.", endpoint, Name(e.status)));
  }
  ResolvedRoute out{e.variant, component, e.strategy, e.timeout, {}};
  if (component.empty() && sole_if_unnamed && e.components.size() == 1) {
    out.component = e.components.begin()->first;
    out.copies = e.components.begin()->second;
    return out;
  }
  if (component.empty()) {
    if (!e.components.empty()) {
      return InvalidArgument(fmt::format(
          "Inference Component Name header is required for endpoints to which you plan to "
          "deploy inference components. Endpoint {} has {} inference component{}; name one in "
          "X-Amzn-SageMaker-Inference-Component.",
          endpoint, e.components.size(), e.components.size() == 1 ? "" : "s"));
    }
    return out;  // No copies: the router answers ModelNotReady.
  }
  auto c = e.components.find(component);
  if (c == e.components.end()) {
    return InvalidArgument(fmt::format(
        "Inference Component {} does not exist on endpoint {}.", component, endpoint));
  }
  out.copies = c->second;
  return out;
}

}  // namespace carve::server::sagemaker
