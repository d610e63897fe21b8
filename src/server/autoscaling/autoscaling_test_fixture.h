// The fixture of the Application Auto Scaling tests: AutoScalingService over a FakeStore, a fake
// clock, real InvocationStats and a fake set of scalable resources, sampled every 10 s, scaling
// out after 30 s above a target and in after 60 s below it. autoscaling_service_test.cc tests the
// operations (validation, errors, records); scaling_engine_test.cc the engine's decisions, tick
// by tick.
#pragma once

#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "server/autoscaling/autoscaling_service.h"
#include "store/fake_store.h"

namespace carve::server::autoscaling {

inline constexpr char kAccount[] = "111111111111";
inline constexpr char kIc[] = "inference-component/ic";

class FakeResources final : public ScalableResources {
 public:
  Result<Capacity> Get(const std::string&, const ScalableKey& key) override {
    auto it = capacity.find(key.resource_id);
    if (it == capacity.end()) return NotFound("Could not find " + key.resource_id);
    return it->second;
  }
  Status Set(const std::string&, const ScalableKey& key, int desired) override {
    sets.push_back(desired);
    Capacity& c = capacity[key.resource_id];
    c.desired = desired;
    if (instant) c.current = desired;
    return OkStatus();
  }
  std::map<std::string, Capacity> capacity;
  std::vector<int> sets;
  bool instant = true;  // The resource reaches the new capacity at once.
};

class AutoScalingServiceTest : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  AutoScalingServiceTest() : store_(clock_) {
    resources_.capacity[kIc] = {1, 1, "ep", ""};
    resources_.capacity["endpoint/ep/variant/AllTraffic"] = {2, 2, "ep", ""};
    Restart();
  }
  void Restart(size_t max_activities_per_target = 0) {
    AutoScalingOptions o;
    if (max_activities_per_target > 0) o.max_activities_per_target = max_activities_per_target;
    o.clock = &clock_;
    o.sample_interval = std::chrono::seconds(10);
    o.scale_out_evaluation = std::chrono::seconds(30);
    o.scale_in_evaluation = std::chrono::seconds(60);
    o.high_resolution_scale_out_evaluation = std::chrono::seconds(20);
    o.metrics = &metrics_;
    service_ = std::make_unique<AutoScalingService>(store_, resources_, stats_, o);
  }
  http::ApiResponse Call(const std::string& op, const json& body) {
    return service_->Handle({op, body.dump(), kAccount, "req"});
  }
  json Ok(const std::string& op, const json& body) {
    http::ApiResponse r = Call(op, body);
    EXPECT_EQ(r.http_status, 200) << op << ": " << r.body;
    return json::parse(r.body);
  }
  // The error type and message of a call expected to fail.
  std::pair<std::string, std::string> Fails(const std::string& op, const json& body) {
    http::ApiResponse r = Call(op, body);
    // Application Auto Scaling answers every client error 400, whatever its type.
    EXPECT_EQ(r.http_status, 400) << op << ": " << r.body;
    json j = json::parse(r.body);
    return {r.error_type, j.value("message", "")};
  }
  static json Key(const std::string& id = kIc, const std::string& dim = std::string(kCopyCount)) {
    return {{"ServiceNamespace", "sagemaker"}, {"ResourceId", id}, {"ScalableDimension", dim}};
  }
  void Register(int min, int max) {
    json b = Key();
    b["MinCapacity"] = min;
    b["MaxCapacity"] = max;
    Ok("RegisterScalableTarget", b);
  }
  // A PutScalingPolicy body: `name` tracks invocations per copy at `target`, cooldowns left out.
  static json InvocationsPolicy(const std::string& name, double target) {
    json b = Key();
    b["PolicyName"] = name;
    b["PolicyType"] = "TargetTrackingScaling";
    b["TargetTrackingScalingPolicyConfiguration"] = {
        {"TargetValue", target},
        {"PredefinedMetricSpecification",
         {{"PredefinedMetricType", "SageMakerInferenceComponentInvocationsPerCopy"}}}};
    return b;
  }
  // A PutScalingPolicy body: `name` tracks carve_test_queue_depth{component=`component`} at
  // `target`, read as `statistic`.
  static json QueueDepthPolicy(const std::string& name, const std::string& component,
                               const std::string& statistic, double target = 10) {
    json b = Key();
    b["PolicyName"] = name;
    b["PolicyType"] = "TargetTrackingScaling";
    b["TargetTrackingScalingPolicyConfiguration"] = {
        {"TargetValue", target},
        {"CustomizedMetricSpecification",
         {{"Namespace", "carve"},
          {"MetricName", "carve_test_queue_depth"},
          {"Dimensions", {{{"Name", "component"}, {"Value", component}}}},
          {"Statistic", statistic}}}};
    return b;
  }
  void TrackInvocations(double target, json extra = json::object()) {
    json b = InvocationsPolicy("per-copy", target);
    json& c = b["TargetTrackingScalingPolicyConfiguration"];
    c["ScaleOutCooldown"] = 60;
    c["ScaleInCooldown"] = 60;
    c.update(extra);
    Ok("PutScalingPolicy", b);
  }
  // A target-tracking policy on carve_test_queue_depth (depth_), a customized metric: its value
  // is not divided by the copy count.
  void TrackQueueDepth(double target, const std::string& name = "queue") {
    json b = QueueDepthPolicy(name, "ic", "Average", target);
    json& c = b["TargetTrackingScalingPolicyConfiguration"];
    c["ScaleOutCooldown"] = 60;
    c["ScaleInCooldown"] = 60;
    Ok("PutScalingPolicy", b);
  }
  // A step-scaling policy on NoCapacityInvocationFailures with `config`'s members.
  void StepOnNoCapacity(json config) {
    json b = Key();
    b["PolicyName"] = "steps";
    b["PolicyType"] = "StepScaling";
    config["Cooldown"] = 60;
    b["StepScalingPolicyConfiguration"] = config;
    Ok("PutScalingPolicy", b);
  }
  // `n` invocations that found no copy, then one tick.
  void NoCapacity(int n) {
    for (int i = 0; i < n; ++i) stats_.NoCapacity({kAccount, "ep", "ic"});
    clock_.Advance(std::chrono::seconds(10));
    service_->Tick();
  }
  // `per_tick` invocations in each 10 s, for `ticks` ticks.
  void Traffic(int per_tick, int ticks) {
    for (int t = 0; t < ticks; ++t) {
      for (int i = 0; i < per_tick; ++i) {
        stats_.Started({kAccount, "ep", "ic"});
        stats_.Finished({kAccount, "ep", "ic"});
      }
      clock_.Advance(std::chrono::seconds(10));
      service_->Tick();
    }
  }
  json Activities() {
    json b = Key();
    return Ok("DescribeScalingActivities", b)["ScalingActivities"];
  }

  FakeClock clock_;
  store::FakeStore store_;
  FakeResources resources_;
  runtime::InvocationStats stats_;
  http::MetricsRegistry metrics_;
  http::Gauge& depth_ =
      metrics_.AddGauge("carve_test_queue_depth", "Requests queued", {"account", "component"});
  http::Gauge& fleet_depth_ = metrics_.AddGauge("carve_test_fleet_depth", "Requests queued", {});
  std::unique_ptr<AutoScalingService> service_;
};

}  // namespace carve::server::autoscaling
