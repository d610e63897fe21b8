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
// Thread-safe. Start() runs the sampler on its own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/result.h"
#include "http/api.h"
#include "http/metrics.h"
#include "runtime/invocation_stats.h"
#include "server/autoscaling/scaling_records.h"
#include "store/store.h"

namespace carve::server::autoscaling {

// What scalable targets scale. The SageMaker service, in carve (app/), behind this seam.
class ScalableResources {
 public:
  virtual ~ScalableResources() = default;
  struct Capacity {
    int desired = 0;
    int current = 0;
    std::string endpoint;        // The component's endpoint (for its invocation signals).
    std::string status_message;  // Why copies or instances wait, when they do.
  };
  // NotFound (its message names the resource) when it does not exist.
  virtual Result<Capacity> Get(const std::string& account, const ScalableKey& key) = 0;
  // Sets the desired capacity through the resource's own operation.
  virtual Status Set(const std::string& account, const ScalableKey& key, int desired) = 0;
};

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

  // Operations (autoscaling_ops.cc).
  Result<nlohmann::json> RegisterScalableTarget(const std::string& account,
                                                const nlohmann::json& in);
  Result<nlohmann::json> DeregisterScalableTarget(const std::string& account,
                                                  const nlohmann::json& in);
  Result<nlohmann::json> DescribeScalableTargets(const std::string& account,
                                                 const nlohmann::json& in);
  Result<nlohmann::json> PutScalingPolicy(const std::string& account, const nlohmann::json& in);
  Result<nlohmann::json> DescribeScalingPolicies(const std::string& account,
                                                 const nlohmann::json& in);
  Result<nlohmann::json> DeleteScalingPolicy(const std::string& account, const nlohmann::json& in);
  Result<nlohmann::json> DescribeScalingActivities(const std::string& account,
                                                   const nlohmann::json& in);
  Result<nlohmann::json> PutScheduledAction(const std::string& account, const nlohmann::json& in);
  Result<nlohmann::json> DescribeScheduledActions(const std::string& account,
                                                  const nlohmann::json& in);
  Result<nlohmann::json> DeleteScheduledAction(const std::string& account,
                                               const nlohmann::json& in);
  Result<ScalableTarget> GetTarget(const std::string& account, const ScalableKey& key);

  // The engine (scaling_engine.cc).
  void EvaluateTarget(const std::string& account, ScalableTarget target,
                      const ScalableResources::Capacity& capacity);
  // Sets the capacity and records the activity; returns whether it was set.
  bool Scale(const std::string& account, const ScalableTarget& target, int from, int to,
             const std::string& cause);
  void RecordActivity(const std::string& account, ScalingActivity activity);
  void UpdateActivities(const std::string& account, const ScalableKey& key,
                        const ScalableResources::Capacity& capacity);
  std::string Arn(const std::string& account, const std::string& what) const;

  store::Store& store_;
  ScalableResources& resources_;
  const runtime::InvocationStats& stats_;
  const AutoScalingOptions options_;
  const Clock& clock_;
  std::mutex mu_;                                   // Serialises operations and ticks.
  std::map<TargetId, std::deque<Sample>> samples_;  // Guarded by mu_.
  // Customized metrics' samples, by (account, policy record name): (millis, value or none).
  struct CustomSample {
    int64_t at_ms = 0;
    std::optional<double> value;
    bool counter = false;
  };
  std::map<std::pair<std::string, std::string>, std::deque<CustomSample>> custom_;  // mu_.
  uint32_t activity_seq_ = 0;  // Guarded by mu_.
  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stop_ = false;  // Guarded by run_mu_.
  std::thread thread_;
};

}  // namespace carve::server::autoscaling
