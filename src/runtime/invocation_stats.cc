#include "runtime/invocation_stats.h"

namespace carve::runtime {

void InvocationStats::Started(const Key& key) {
  std::lock_guard lock(mu_);
  Totals& t = totals_[key];
  ++t.invocations;
  ++t.in_flight;
}

void InvocationStats::Finished(const Key& key) {
  std::lock_guard lock(mu_);
  --totals_[key].in_flight;
}

void InvocationStats::NoCapacity(const Key& key) {
  std::lock_guard lock(mu_);
  ++totals_[key].no_capacity;
}

InvocationStats::Totals InvocationStats::Get(const Key& key) const {
  std::lock_guard lock(mu_);
  auto it = totals_.find(key);
  return it == totals_.end() ? Totals{} : it->second;
}

InvocationStats::Totals InvocationStats::EndpointTotals(const std::string& account,
                                                        const std::string& endpoint) const {
  std::lock_guard lock(mu_);
  Totals sum;
  for (auto it = totals_.lower_bound(Key{account, endpoint, ""});
       it != totals_.end() && it->first.account == account && it->first.endpoint == endpoint;
       ++it) {
    sum.invocations += it->second.invocations;
    sum.no_capacity += it->second.no_capacity;
    sum.in_flight += it->second.in_flight;
  }
  return sum;
}

}  // namespace carve::runtime
