// CopyBalancer: chooses which copy of a component serves the next request, from per-copy
// outstanding-request counters, and keeps copies that refused a connection out of rotation for a
// short quarantine.
//
// LEAST_OUTSTANDING_REQUESTS picks a copy with the fewest requests in flight through this router
// (ties broken uniformly at random, so idle copies share a burst); RANDOM picks uniformly. Only
// copies not excluded by the caller (already tried for this request) and not quarantined are
// eligible; when every remaining copy is quarantined, Pick returns nothing.
// Worked example: outstanding {a:2, b:0, c:0}, LOR -> b or c (coin flip); after Acquire(b),
// {a:2, b:1, c:0} -> c.
// Thread-safe (one mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "http/metrics.h"
#include "runtime/copy_directory.h"

namespace carve::runtime {

class CopyBalancer {
 public:
  // `in_flight` (labels account, component, copy) mirrors the counters; may be null. `clock` must
  // outlive the balancer. seed 0 seeds from std::random_device.
  CopyBalancer(const Clock& clock, std::chrono::milliseconds quarantine, http::Gauge* in_flight,
               uint64_t seed = 0);

  // Holds one outstanding request on a copy; releases it on destruction. Movable.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    const CopyTarget& copy() const { return copy_; }

   private:
    friend class CopyBalancer;
    Lease(CopyBalancer* owner, CopyTarget copy, http::LabelValues series);
    void Release();
    CopyBalancer* owner_ = nullptr;
    CopyTarget copy_;
    http::LabelValues series_;  // The in-flight gauge's labels: {account, component, copy}.
  };

  // Picks an eligible copy of `copies` and counts a request on it, or nullopt when none is left.
  // `account` and `component` name the copies' owner in the in-flight gauge (copy ids are
  // unique fleet-wide, so the counters are kept by copy id alone).
  std::optional<Lease> Acquire(const std::string& account, const std::string& component,
                               Strategy strategy, const std::vector<CopyTarget>& copies,
                               const std::set<std::string>& excluded);

  // Keeps `copy_id` out of rotation until now + quarantine.
  void Quarantine(const std::string& copy_id);
  bool IsQuarantined(const std::string& copy_id) const;
  int64_t Outstanding(const std::string& copy_id) const;

 private:
  void Release(const http::LabelValues& series, const std::string& copy_id);

  const Clock& clock_;
  const std::chrono::milliseconds quarantine_;
  http::Gauge* const in_flight_;
  mutable std::mutex mu_;
  std::map<std::string, int64_t> outstanding_;  // Guarded by mu_; entries at 0 are erased.
  std::map<std::string, std::chrono::steady_clock::time_point> quarantined_until_;  // mu_.
  std::mt19937_64 rng_;                                                             // mu_.
};

}  // namespace carve::runtime
