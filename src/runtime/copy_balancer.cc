#include "runtime/copy_balancer.h"

#include <utility>

namespace carve::runtime {

CopyBalancer::CopyBalancer(const Clock& clock, std::chrono::milliseconds quarantine,
                           http::Gauge* in_flight, uint64_t seed)
    : clock_(clock),
      quarantine_(quarantine),
      in_flight_(in_flight),
      rng_(seed != 0 ? seed : std::random_device{}()) {}

CopyBalancer::Lease::Lease(CopyBalancer* owner, CopyTarget copy, http::LabelValues series)
    : owner_(owner), copy_(std::move(copy)), series_(std::move(series)) {}

CopyBalancer::Lease::Lease(Lease&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      copy_(std::move(other.copy_)),
      series_(std::move(other.series_)) {}

CopyBalancer::Lease& CopyBalancer::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::exchange(other.owner_, nullptr);
    copy_ = std::move(other.copy_);
    series_ = std::move(other.series_);
  }
  return *this;
}

CopyBalancer::Lease::~Lease() { Release(); }

void CopyBalancer::Lease::Release() {
  if (owner_ != nullptr) std::exchange(owner_, nullptr)->Release(series_, copy_.id);
}

std::optional<CopyBalancer::Lease> CopyBalancer::Acquire(const std::string& account,
                                                         const std::string& component,
                                                         Strategy strategy,
                                                         const std::vector<CopyTarget>& copies,
                                                         const std::set<std::string>& excluded) {
  std::lock_guard lock(mu_);
  const auto now = clock_.Now();
  std::vector<const CopyTarget*> eligible;
  std::vector<const CopyTarget*> quarantined;
  int64_t best = INT64_MAX;
  for (const CopyTarget& c : copies) {
    if (excluded.count(c.id) != 0) continue;
    auto q = quarantined_until_.find(c.id);
    if (q != quarantined_until_.end()) {
      if (q->second > now) {
        quarantined.push_back(&c);
        continue;
      }
      quarantined_until_.erase(q);
    }
    if (strategy == Strategy::kLeastOutstandingRequests) {
      auto it = outstanding_.find(c.id);
      const int64_t n = it == outstanding_.end() ? 0 : it->second;
      if (n > best) continue;
      if (n < best) {
        best = n;
        eligible.clear();
      }
    }
    eligible.push_back(&c);
  }
  // Quarantine is a preference: with only quarantined copies left, try one rather than refuse
  // (a lone copy that dropped one connection must not turn away traffic for the whole period).
  if (eligible.empty()) eligible = std::move(quarantined);
  if (eligible.empty()) return std::nullopt;
  std::uniform_int_distribution<size_t> pick(0, eligible.size() - 1);
  const CopyTarget& chosen = *eligible[eligible.size() == 1 ? 0 : pick(rng_)];
  ++outstanding_[chosen.id];
  http::LabelValues series{account, component, chosen.id};
  if (in_flight_ != nullptr) in_flight_->Add(series, 1);
  return Lease(this, chosen, std::move(series));
}

void CopyBalancer::Release(const http::LabelValues& series, const std::string& copy_id) {
  std::lock_guard lock(mu_);
  auto it = outstanding_.find(copy_id);
  if (it != outstanding_.end() && --it->second <= 0) outstanding_.erase(it);
  if (in_flight_ != nullptr) in_flight_->Add(series, -1);
}

void CopyBalancer::Quarantine(const std::string& copy_id) {
  std::lock_guard lock(mu_);
  quarantined_until_[copy_id] = clock_.Now() + quarantine_;
}

bool CopyBalancer::IsQuarantined(const std::string& copy_id) const {
  std::lock_guard lock(mu_);
  auto it = quarantined_until_.find(copy_id);
  return it != quarantined_until_.end() && it->second > clock_.Now();
}

int64_t CopyBalancer::Outstanding(const std::string& copy_id) const {
  std::lock_guard lock(mu_);
  auto it = outstanding_.find(copy_id);
  return it == outstanding_.end() ? 0 : it->second;
}

}  // namespace carve::runtime
