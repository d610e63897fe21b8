// The scaling activities of Application Auto Scaling, as Store records: every change of a
// target's capacity or bounds is one, with the service's Description and Cause wording. An
// activity that set a capacity stays InProgress until the resource reaches it, carrying the
// resource's StatusMessage while copies wait; a later change Overrides it.
//
// Not thread-safe: AutoScalingService calls it under its own lock.
#pragma once

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "server/autoscaling/scalable_resources.h"
#include "server/autoscaling/scaling_records.h"
#include "store/store.h"

namespace carve::server::autoscaling {

class ActivityLog {
 public:
  // Keeps the newest `max_per_target` activities of each target.
  ActivityLog(store::Store& store, const Clock& clock, size_t max_per_target)
      : store_(store), clock_(clock), max_per_target_(max_per_target) {}

  // Writes `activity` with a fresh id and order number, and removes the target's oldest beyond
  // the newest max_per_target. A store failure is logged: an activity is a record of what
  // happened, never a reason to undo it.
  void Record(const std::string& account, ScalingActivity activity);

  // Brings the target's InProgress activities up to date with its resource's capacity:
  // Successful once it is reached, Overridden when a newer activity changed the desired
  // capacity, else the resource's status message (or "C of D in service").
  void Update(const std::string& account, const ScalableKey& key,
              const ScalableResources::Capacity& capacity);

  // Sets the target's desired capacity from `from` to `to` through its resource, and records
  // the activity: InProgress, or Failed with the resource's error. Returns whether it was set.
  bool Scale(ScalableResources& resources, const std::string& account, const ScalableKey& key,
             int from, int to, const std::string& cause);

 private:
  store::Store& store_;
  const Clock& clock_;
  const size_t max_per_target_;
  uint32_t seq_ = 0;
};

// An activity id: a random UUID, as the service gives.
std::string ActivityId();
// "2026-12-06T08:00:00Z": how causes quote the moment.
std::string UtcTime(int64_t ms);

}  // namespace carve::server::autoscaling
