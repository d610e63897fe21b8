// AutoScalingService: Application Auto Scaling for inference components and endpoint variants,
// behind `POST /` with X-Amz-Target "AnyScaleFrontendService.<Operation>" (awsJson1.1, SigV4
// signed for service application-autoscaling), so `aws application-autoscaling --endpoint-url`
// and boto3 drive it.
//
// Scalable dimensions (service namespace sagemaker only):
//   sagemaker:inference-component:DesiredCopyCount  resource inference-component/NAME
//   sagemaker:variant:DesiredInstanceCount          resource endpoint/E/variant/V
// Capacity changes go through the resource's own SageMaker operation
// (UpdateInferenceComponentRuntimeConfig, UpdateEndpointWeightsAndCapacities), the same path a
// user's call takes: copies that do not fit wait, and a rolling deployment in progress takes the
// new count in its stride.
//
// Policies (docs/autoscaling.md):
//   - TargetTrackingScaling on a customized metric naming one of carve's own series
//     (Namespace "carve", MetricName a gauge or counter of GET /metrics with an account label,
//     Dimensions its labels, Statistic over the matching series of the policy's own account; a
//     counter is read as its rate per minute), or on a
//     predefined metric: SageMakerInferenceComponentInvocationsPerCopy
//     (invocations per minute per copy), SageMakerInferenceComponentConcurrentRequestsPerCopy
//     HighResolution (requests in flight per copy), SageMakerVariantInvocationsPerInstance. The
//     signals are sampled every sample_interval from the router's InvocationStats and judged as
//     CloudWatch alarms judge datapoints (3 periods of the window to scale out, 15 to scale in;
//     a rate per period, a level's mean). It scales out when every datapoint of the last
//     scale_out_evaluation (high_resolution_scale_out_evaluation
//     for the HighResolution metric) is above the target, to
//     ceil(capacity * metric / target), and in when every datapoint of the last scale_in_evaluation
//     is below 90% of it; ScaleOutCooldown and ScaleInCooldown (default 300 s) apply, a scale-out
//     cooldown also holds scale-in, and DisableScaleIn holds scale-in for good.
//   - StepScaling on a component: carve's stand-in for the CloudWatch alarm AWS users put on
//     NoCapacityInvocationFailures. It is in ALARM when an invocation found no copy in the last
//     sample interval; the step whose bounds hold the failure count applies. This is how a
//     component scales out from zero copies.
//   - Scheduled actions with at(...) and rate(...) schedules set MinCapacity and MaxCapacity.
// Every change is a scaling activity with the service's Description and Cause wording; it is
// InProgress until the resource's current capacity reaches the new desired one, with the
// resource's StatusMessage while copies wait.
//
// Durability: targets, policies (with when each last scaled), scheduled actions and activities
// are Store records. Samples are memory only, so after a restart no policy acts until it has a
// whole evaluation period of fresh samples: a restart causes no scaling.
//
// The parts: the operations (ops.h, one file per resource), the typed policy spec
// (policy_spec.h), the datapoints (datapoints.h), each policy kind's decision
// (policy_decisions.h), the activity log (activity_log.h), and the engine here that samples and
// combines them (scaling_engine.cc).
//
// Thread-safe. Start() runs the sampler on a ReconcilerLoop.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "http/api.h"
#include "http/metrics.h"
#include "runtime/invocation_stats.h"
#include "server/autoscaling/activity_log.h"
#include "server/autoscaling/datapoints.h"
#include "server/autoscaling/ops.h"
#include "server/autoscaling/scalable_resources.h"
#include "server/autoscaling/scaling_records.h"
#include "server/reconciler_loop.h"
#include "store/store.h"

namespace carve::server::autoscaling {

struct AutoScalingOptions {
  std::string region = "us-east-1";
  const Clock* clock = nullptr;  // nullptr: SystemClock.
  std::chrono::milliseconds sample_interval{10'000};
  // Scale out after the metric is above its target this long: 3 datapoints, as AWS's alarms
  // count them, of a standard metric's 1 minute, or of a high-resolution metric's 10 s.
  std::chrono::milliseconds scale_out_evaluation{std::chrono::minutes(3)};
  std::chrono::milliseconds high_resolution_scale_out_evaluation{std::chrono::seconds(30)};
  // Scale in after it is below 90% of the target this long, for every metric (AWS: high-resolution
  // metrics scale in at the same rate as standard ones).
  std::chrono::milliseconds scale_in_evaluation{std::chrono::minutes(15)};
  size_t max_activities_per_target = 100;  // Older ones are removed.
  // Where customized metrics are read (carve's own Prometheus series); nullptr refuses them.
  const http::MetricsRegistry* metrics = nullptr;
};

class AutoScalingService {
 public:
  AutoScalingService(store::Store& store, ScalableResources& resources,
                     const runtime::InvocationStats& stats, AutoScalingOptions options = {});
  ~AutoScalingService();  // Stop()s.
  AutoScalingService(const AutoScalingService&) = delete;
  AutoScalingService& operator=(const AutoScalingService&) = delete;

  http::ApiResponse Handle(const http::ApiRequest& request);

  // The last sample's metric values of every scalable target, as the policies read them (for
  // /metrics): invocations per minute per unit of capacity (copy or instance) and, for
  // components, requests in flight per copy. Units are absent while the capacity is 0.
  struct Signal {
    std::string account;
    ScalableKey key;
    int capacity = 0;
    double invocations_per_unit = 0;
    double concurrent_per_copy = 0;
  };
  std::vector<Signal> Signals();

  void Start();
  void Stop();
  // One sample of every target's signals and one evaluation of its policies and scheduled
  // actions (the background thread calls it every sample_interval; tests call it directly).
  void Tick();
  // Targets whose samples the service holds: the registered ones it has ticked since. A
  // deregistered target's go at the next tick, so churn of targets holds no memory.
  size_t SampledTargets();

 private:
  struct Sample {
    int64_t at_ms = 0;
    uint64_t invocations = 0;
    uint64_t no_capacity = 0;
    int64_t in_flight = 0;
    int capacity = 0;
  };
  using TargetId = std::pair<std::string, ScalableKey>;  // (account, key)
  // A customized metric's sample: (millis, value or none), and whether it is a counter.
  struct CustomSample {
    int64_t at_ms = 0;
    std::optional<double> value;
    bool counter = false;
  };
  using PolicyId = std::pair<std::string, std::string>;  // (account, policy record name)

  // The engine (scaling_engine.cc).
  // Runs the first due scheduled action of `target` (updating it and its record); a due action
  // changes the target's record version, so the next one waits for the next tick.
  void RunScheduledActions(const std::string& account, const store::Record& record,
                           ScalableTarget& target, const ScalableResources::Capacity& capacity);
  // Each policy's verdict, combined: any scale-out wins, the largest; scale-in only when every
  // target-tracking policy wants it, to the largest capacity any wants.
  void EvaluateTarget(const std::string& account, const ScalableTarget& target,
                      const ScalableResources::Capacity& capacity);
  // A policy's metric over the samples held for it.
  MetricSeries SeriesOf(const std::string& account, const store::Record& record,
                        const TargetTrackingSpec& spec, const std::deque<Sample>& samples) const;
  // Samples every policy's customized metric, outside mu_.
  std::map<PolicyId, CustomSample> SampleCustomMetrics() const;

  store::Store& store_;
  ScalableResources& resources_;
  const runtime::InvocationStats& stats_;
  const AutoScalingOptions options_;
  const Clock& clock_;
  std::mutex mu_;           // Serialises operations and ticks.
  ActivityLog activities_;  // Guarded by mu_.
  const OpContext ctx_;
  std::map<TargetId, std::deque<Sample>> samples_;  // Guarded by mu_.
  std::map<PolicyId, std::deque<CustomSample>> custom_;  // Guarded by mu_.
  ReconcilerLoop loop_;  // Runs Tick() every sample_interval once started.
};

}  // namespace carve::server::autoscaling
