// AutoScalingService over a FakeStore, a fake clock, real InvocationStats and a fake set of
// scalable resources: the operations' validation and errors, and the engine's decisions tick by
// tick (sample every 10 s, scale out after 30 s above the target, in after 60 s below it).
#include "server/autoscaling/autoscaling_service.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "store/fake_store.h"

namespace carve::server::autoscaling {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kAccount[] = "111111111111";
constexpr char kIc[] = "inference-component/ic";

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
  AutoScalingServiceTest() : store_(clock_) {
    resources_.capacity[kIc] = {1, 1, "ep", ""};
    resources_.capacity["endpoint/ep/variant/AllTraffic"] = {2, 2, "ep", ""};
    Restart();
  }
  void Restart(size_t max_activities_per_target = 0) {
    AutoScalingOptions o;
    if (max_activities_per_target > 0) o.max_activities_per_target = max_activities_per_target;
    o.clock = &clock_;
    o.sample_interval = 10s;
    o.scale_out_evaluation = 30s;
    o.scale_in_evaluation = 60s;
    o.high_resolution_scale_out_evaluation = 20s;
    o.metrics = &metrics_;
    service_ = std::make_unique<AutoScalingService>(store_, resources_, stats_, o);
  }
  ApiResponse Call(const std::string& op, const json& body) {
    return service_->Handle({op, body.dump(), kAccount, "req"});
  }
  json Ok(const std::string& op, const json& body) {
    ApiResponse r = Call(op, body);
    EXPECT_EQ(r.http_status, 200) << op << ": " << r.body;
    return json::parse(r.body);
  }
  // The error type and message of a call expected to fail.
  std::pair<std::string, std::string> Fails(const std::string& op, const json& body) {
    ApiResponse r = Call(op, body);
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
    json b = Key();
    b["PolicyName"] = name;
    b["PolicyType"] = "TargetTrackingScaling";
    b["TargetTrackingScalingPolicyConfiguration"] = {
        {"TargetValue", target},
        {"CustomizedMetricSpecification",
         {{"Namespace", "carve"},
          {"MetricName", "carve_test_queue_depth"},
          {"Dimensions", {{{"Name", "component"}, {"Value", "ic"}}}},
          {"Statistic", "Average"}}},
        {"ScaleOutCooldown", 60},
        {"ScaleInCooldown", 60}};
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
    clock_.Advance(10s);
    service_->Tick();
  }
  // `per_tick` invocations in each 10 s, for `ticks` ticks.
  void Traffic(int per_tick, int ticks) {
    for (int t = 0; t < ticks; ++t) {
      for (int i = 0; i < per_tick; ++i) {
        stats_.Started({kAccount, "ep", "ic"});
        stats_.Finished({kAccount, "ep", "ic"});
      }
      clock_.Advance(10s);
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
  MetricsRegistry metrics_;
  Gauge& depth_ =
      metrics_.AddGauge("carve_test_queue_depth", "Requests queued", {"account", "component"});
  Gauge& fleet_depth_ = metrics_.AddGauge("carve_test_fleet_depth", "Requests queued", {});
  std::unique_ptr<AutoScalingService> service_;
};

// Issue 35: bodies nested past the depth limit, repeated keys and bytes that are not UTF-8 are
// each a ValidationException naming the rule, never a crash or an escaping exception.
TEST_F(AutoScalingServiceTest, RefusesDeepDuplicateAndNonUtf8BodiesNamingTheRule) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const auto& [body, rule] : std::vector<std::pair<std::string, std::string>>{
           {R"({"ServiceNamespace":)" + deep + "}", "deeper than 64 levels (the JSON depth limit)"},
           {R"({"ServiceNamespace":"sagemaker","ServiceNamespace":"x"})",
            R"(has the key "ServiceNamespace" more than once)"},
           {"{\"ServiceNamespace\":\"\xff\"}", "is not valid JSON"}}) {
    ApiResponse r = service_->Handle({"DescribeScalableTargets", body, kAccount, "req"});
    EXPECT_EQ(r.http_status, 400);
    EXPECT_EQ(r.error_type, "ValidationException");
    const json j = json::parse(r.body);
    EXPECT_NE(j.value("message", "").find(rule), std::string::npos) << r.body.substr(0, 300);
  }
}

TEST_F(AutoScalingServiceTest, RegisteringValidatesAsTheServiceDoes) {
  auto [type, msg] = Fails("RegisterScalableTarget", Key());
  EXPECT_EQ(type, "ValidationException");
  EXPECT_NE(msg.find("MinCapacity and MaxCapacity are required"), std::string::npos) << msg;
  json b = Key();
  b["MinCapacity"] = 5;
  b["MaxCapacity"] = 2;
  std::tie(type, msg) = Fails("RegisterScalableTarget", b);
  EXPECT_NE(msg.find("Minimum capacity 5 cannot be greater than maximum capacity 2"),
            std::string::npos)
      << msg;
  b = Key("inference-component/nope");
  b["MinCapacity"] = 0;
  b["MaxCapacity"] = 2;
  std::tie(type, msg) = Fails("RegisterScalableTarget", b);
  EXPECT_EQ(type, "ValidationException");
  EXPECT_NE(msg.find("Could not find inference-component/nope"), std::string::npos) << msg;
  b = Key();
  b["ServiceNamespace"] = "ecs";
  std::tie(type, msg) = Fails("RegisterScalableTarget", b);
  EXPECT_NE(msg.find("at 'serviceNamespace'"), std::string::npos) << msg;
  std::tie(type, msg) = Fails("DeregisterScalableTarget", Key());
  EXPECT_EQ(type, "ObjectNotFoundException");
  EXPECT_NE(msg.find("No scalable target registered for service namespace: sagemaker, resource "
                     "ID: inference-component/ic"),
            std::string::npos)
      << msg;
  std::tie(type, msg) = Fails("GetPredictiveScalingForecast", Key());
  EXPECT_EQ(type, "UnknownOperationException");
}

// On etcd one commit removes at most 127 records; a target can hold more with its activities.
TEST_F(AutoScalingServiceTest, DeregisteringRemovesMoreRecordsThanOneCommitHolds) {
  Register(1, 4);
  for (const char* name : {"a", "b", "c"}) {
    json b = Key();
    b["PolicyName"] = name;
    b["PolicyType"] = "TargetTrackingScaling";
    b["TargetTrackingScalingPolicyConfiguration"] = {
        {"TargetValue", 10},
        {"PredefinedMetricSpecification",
         {{"PredefinedMetricType", "SageMakerInferenceComponentInvocationsPerCopy"}}}};
    Ok("PutScalingPolicy", b);
  }
  store_.set_max_commit_keys(2);
  Ok("DeregisterScalableTarget", Key());
  for (std::string_view kind : {kTargetKind, kPolicyKind, kScheduledKind, kActivityKind}) {
    EXPECT_TRUE(store_.ListAllAccounts(std::string(kind))->empty()) << kind;
  }
  EXPECT_TRUE(Ok("DescribeScalingPolicies", {{"ServiceNamespace", "sagemaker"}})["ScalingPolicies"]
                  .empty());
}

TEST_F(AutoScalingServiceTest, RegisteringBringsTheCapacityWithinTheBoundsAndUpdatesThem) {
  Register(2, 4);
  EXPECT_EQ(resources_.sets, std::vector<int>{2});
  json b = Key();
  b["MaxCapacity"] = 6;  // An update needs only what changes.
  Ok("RegisterScalableTarget", b);
  json t = Ok("DescribeScalableTargets", {{"ServiceNamespace", "sagemaker"}})["ScalableTargets"];
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["MinCapacity"], 2);
  EXPECT_EQ(t[0]["MaxCapacity"], 6);
  EXPECT_FALSE(t[0].contains("Carve"));
}

// RoleARN as AWS shows it: the caller's service-linked role for SageMaker, with its account.
TEST_F(AutoScalingServiceTest, ATargetsRoleIsTheCallersServiceLinkedRole) {
  Register(1, 2);
  json t = Ok("DescribeScalableTargets", {{"ServiceNamespace", "sagemaker"}})["ScalableTargets"];
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["RoleARN"],
            "arn:aws:iam::111111111111:role/aws-service-role/"
            "sagemaker.application-autoscaling.amazonaws.com/"
            "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint");
}

// PolicyType's enum message lists AWS's value set; a value AWS has and carve does not run is
// refused on its own, saying which carve runs.
TEST_F(AutoScalingServiceTest, APolicyTypeOutsideTheEnumAndOneCarveDoesNotRunAreToldApart) {
  Register(1, 2);
  json b = Key();
  b["PolicyName"] = "p";
  b["PolicyType"] = "Bogus";
  auto [type, msg] = Fails("PutScalingPolicy", b);
  EXPECT_EQ(type, "ValidationException");
  EXPECT_NE(msg.find("Value 'Bogus' at 'policyType' failed to satisfy constraint: Member must "
                     "satisfy enum value set: [PredictiveScaling, StepScaling, "
                     "TargetTrackingScaling]"),
            std::string::npos)
      << msg;
  b["PolicyType"] = "PredictiveScaling";
  std::tie(type, msg) = Fails("PutScalingPolicy", b);
  EXPECT_EQ(type, "ValidationException");
  EXPECT_NE(msg.find("Value 'PredictiveScaling' at 'policyType' failed to satisfy constraint: "
                     "carve implements the policy types StepScaling and TargetTrackingScaling"),
            std::string::npos)
      << msg;
}

TEST_F(AutoScalingServiceTest, PoliciesAreCheckedAgainstTheirTarget) {
  json b = InvocationsPolicy("p", 5);
  auto [type, msg] = Fails("PutScalingPolicy", b);
  EXPECT_EQ(type, "ObjectNotFoundException") << msg;
  Register(0, 4);
  b["TargetTrackingScalingPolicyConfiguration"]["PredefinedMetricSpecification"]
   ["PredefinedMetricType"] = "SageMakerVariantInvocationsPerInstance";
  std::tie(type, msg) = Fails("PutScalingPolicy", b);
  EXPECT_NE(msg.find("applies to scalable dimension sagemaker:variant:DesiredInstanceCount"),
            std::string::npos)
      << msg;
  b["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"] = {
      {"MetricName", "x"}};
  std::tie(type, msg) = Fails("PutScalingPolicy", b);
  EXPECT_NE(msg.find("give PredefinedMetricSpecification or CustomizedMetricSpecification, not "
                     "both"),
            std::string::npos)
      << msg;
  json del = Key();
  del["PolicyName"] = "p";
  std::tie(type, msg) = Fails("DeleteScalingPolicy", del);
  EXPECT_EQ(type, "ObjectNotFoundException");
}

// TargetValue is held to Application Auto Scaling's range, 8.515920e-109 to 1.174271e+108,
// both ends, with the constraint named.
TEST_F(AutoScalingServiceTest, TargetValueIsHeldToTheServicesRange) {
  Register(1, 4);
  json b = InvocationsPolicy("p", 2e108);
  auto [type, msg] = Fails("PutScalingPolicy", b);
  EXPECT_EQ(type, "ValidationException");
  EXPECT_NE(msg.find("targetTrackingScalingPolicyConfiguration.targetValue"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("less than or equal to 1.174271e+108"), std::string::npos) << msg;
  b["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] = 1e-109;
  std::tie(type, msg) = Fails("PutScalingPolicy", b);
  EXPECT_NE(msg.find("greater than or equal to 8.51592e-109"), std::string::npos) << msg;
  b["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] = 1e108;
  Ok("PutScalingPolicy", b);
}

// A target deregistered elsewhere (its record removed by another replica, which this service's
// DeregisterScalableTarget never saw) loses its samples at the next tick: a service whose targets
// come and go holds samples for the registered ones only.
TEST_F(AutoScalingServiceTest, ATargetRemovedByAnotherReplicaLosesItsSamples) {
  Register(1, 10);
  TrackInvocations(10);
  Traffic(5, 3);
  EXPECT_EQ(service_->SampledTargets(), 1u);
  const store::Key key{kAccount, std::string(kTargetKind),
                       std::string(kCopyCount) + " " + std::string(kIc)};
  auto rec = store_.Get(key);
  ASSERT_TRUE(rec.has_value()) << rec.error().message;
  ASSERT_TRUE(store_.Delete(key).ok());
  Traffic(0, 1);
  EXPECT_EQ(service_->SampledTargets(), 0u);
  Register(1, 10);
  Traffic(0, 1);
  EXPECT_EQ(service_->SampledTargets(), 1u);
}

TEST_F(AutoScalingServiceTest, LoadAboveTheTargetScalesOutOnceItLastedTheEvaluationPeriod) {
  Register(1, 10);
  resources_.sets.clear();
  TrackInvocations(10);  // Invocations per copy per minute.
  Traffic(5, 3);         // 30 per minute on one copy, for 30 s: the window is not covered yet.
  EXPECT_TRUE(resources_.sets.empty());
  Traffic(5, 1);
  ASSERT_EQ(resources_.sets, std::vector<int>{3});  // ceil(1 * 30 / 10)
  json a = Activities();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["Description"], "Setting desired copy count to 3.");
  EXPECT_NE(a[0]["Cause"].get<std::string>().find(
                "monitor alarm TargetTracking-inference-component/ic-AlarmHigh-per-copy in state "
                "ALARM triggered policy per-copy"),
            std::string::npos)
      << a[0].dump();
  // Within the 60 s scale-out cooldown nothing more happens, whatever the load.
  Traffic(60, 5);
  EXPECT_EQ(resources_.sets, std::vector<int>{3});
  Traffic(60, 2);
  ASSERT_EQ(resources_.sets.size(), 2u);
  EXPECT_EQ(resources_.sets[1], 10);  // ceil(3 * 120 / 10) = 36, held to MaxCapacity.
}

TEST_F(AutoScalingServiceTest, TheHighResolutionMetricScalesOutAfterItsShorterWindow) {
  Register(1, 10);
  json b = Key();
  b["PolicyName"] = "concurrency";
  b["PolicyType"] = "TargetTrackingScaling";
  b["TargetTrackingScalingPolicyConfiguration"] = {
      {"TargetValue", 1},
      {"PredefinedMetricSpecification",
       {{"PredefinedMetricType",
         "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"}}}};
  Ok("PutScalingPolicy", b);
  for (int i = 0; i < 3; ++i) stats_.Started({kAccount, "ep", "ic"});  // 3 in flight, 1 copy.
  Traffic(0, 2);
  EXPECT_TRUE(resources_.sets.empty());
  Traffic(0, 1);  // 20 s of samples: the high-resolution window, not the standard 30 s.
  EXPECT_EQ(resources_.sets, std::vector<int>{3});
}

TEST_F(AutoScalingServiceTest, NoLoadScalesInToTheMinimumAndDisableScaleInHoldsIt) {
  Register(0, 10);
  resources_.capacity[kIc] = {4, 4, "ep", ""};
  TrackInvocations(10);
  Traffic(0, 6);  // 60 s of samples, but the first does not cover the window yet.
  EXPECT_TRUE(resources_.sets.empty());
  Traffic(0, 1);
  EXPECT_EQ(resources_.sets, std::vector<int>{0});  // Scale to zero.
  resources_.capacity[kIc] = {4, 4, "ep", ""};
  TrackInvocations(10, {{"DisableScaleIn", true}});
  resources_.sets.clear();
  Traffic(0, 20);
  EXPECT_TRUE(resources_.sets.empty());
}

// Each direction waits its own cooldown, so the two get different values here: a second
// scale-out 30 s after the first (ScaleOutCooldown 30, not ScaleInCooldown's 600), and a second
// scale-in once the load has been low for the window, well inside ScaleOutCooldown's 600.
TEST_F(AutoScalingServiceTest, EachDirectionWaitsItsOwnCooldown) {
  Register(1, 10);
  resources_.sets.clear();
  TrackInvocations(10, {{"ScaleOutCooldown", 30}, {"ScaleInCooldown", 600}});
  Traffic(5, 4);  // 30 per minute on one copy.
  ASSERT_EQ(resources_.sets, std::vector<int>{3});
  Traffic(60, 3);  // 360 per minute on 3 copies, for the 30 s window: past the 30 s cooldown.
  EXPECT_EQ(resources_.sets, (std::vector<int>{3, 10}));

  clock_.Advance(600s);  // A scale-out's cooldown holds scale-in too: let it pass.
  resources_.capacity[kIc] = {8, 8, "ep", ""};
  resources_.sets.clear();
  TrackInvocations(10, {{"ScaleOutCooldown", 600}, {"ScaleInCooldown", 30}});
  Traffic(5, 7);  // 30 per minute on 8 copies: 3.75 per copy, below 90 % of 10.
  ASSERT_EQ(resources_.sets, std::vector<int>{3});  // ceil(30 / 10)
  Traffic(1, 6);  // 6 per minute on 3 copies: 2 per copy, low for the whole 60 s window.
  EXPECT_EQ(resources_.sets, (std::vector<int>{3, 1}));
}

// Application Auto Scaling scales in only when every target-tracking policy of the target
// wants to; a policy at its target holds the others back. When all agree, the largest capacity
// any of them wants wins.
TEST_F(AutoScalingServiceTest, ScaleInWaitsUntilEveryTrackingPolicyWantsIt) {
  Register(1, 10);
  resources_.capacity[kIc] = {4, 4, "ep", ""};
  resources_.sets.clear();
  TrackInvocations(10);  // No traffic: this one wants the minimum.
  json b = Key();
  b["PolicyName"] = "queue";
  b["PolicyType"] = "TargetTrackingScaling";
  b["TargetTrackingScalingPolicyConfiguration"] = {
      {"TargetValue", 10},
      {"CustomizedMetricSpecification",
       {{"Namespace", "carve"},
        {"MetricName", "carve_test_queue_depth"},
        {"Dimensions", {{{"Name", "component"}, {"Value", "ic"}}}},
        {"Statistic", "Average"}}}};
  Ok("PutScalingPolicy", b);
  depth_.Set({kAccount, "ic"}, 10);  // Exactly at its target: neither high nor low.
  Traffic(0, 12);
  EXPECT_TRUE(resources_.sets.empty());
  depth_.Set({kAccount, "ic"}, 5);  // Now both want fewer copies.
  Traffic(0, 7);
  EXPECT_EQ(resources_.sets, std::vector<int>{2});  // max(1, ceil(4 * 5 / 10))
}

// A writer that lost a race gets ConcurrentUpdateException (docs/autoscaling.md), as AWS
// answers: its create found the record another request made since it read none, or its update
// found a newer version. Not a ValidationException, which says the request itself is wrong.
TEST_F(AutoScalingServiceTest, AWriterThatLostARaceGetsConcurrentUpdateException) {
  store_.FailNthCommit(1, AlreadyExists("exists"));
  json b = Key();
  b["MinCapacity"] = 1;
  b["MaxCapacity"] = 4;
  auto [type, msg] = Fails("RegisterScalableTarget", b);
  EXPECT_EQ(type, "ConcurrentUpdateException");
  EXPECT_NE(msg.find("was created by another request meanwhile"), std::string::npos) << msg;
  Register(1, 4);

  store_.FailNthCommit(1, AlreadyExists("exists"));
  json p = InvocationsPolicy("per-copy", 10);
  std::tie(type, msg) = Fails("PutScalingPolicy", p);
  EXPECT_EQ(type, "ConcurrentUpdateException");
  EXPECT_NE(msg.find("per-copy"), std::string::npos) << msg;
  Ok("PutScalingPolicy", p);

  store_.FailNthCommit(1, FailedPrecondition("version 1 is not current"));
  p["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] = 20;
  std::tie(type, msg) = Fails("PutScalingPolicy", p);
  EXPECT_EQ(type, "ConcurrentUpdateException");
}

// An update of one bound is checked against the other as stored, and brings the capacity
// within the new bounds: MinCapacity 4 against the stored MaxCapacity 3 is refused naming both;
// MaxCapacity 2 lowers a capacity of 3 to 2.
TEST_F(AutoScalingServiceTest, UpdatingOneBoundIsCheckedAgainstTheStoredOther) {
  resources_.capacity[kIc] = {3, 3, "ep", ""};
  Register(1, 3);
  resources_.sets.clear();
  json b = Key();
  b["MinCapacity"] = 4;
  auto [type, msg] = Fails("RegisterScalableTarget", b);
  EXPECT_EQ(type, "ValidationException");
  EXPECT_EQ(msg, "Minimum capacity 4 cannot be greater than maximum capacity 3");
  b.erase("MinCapacity");
  b["MaxCapacity"] = 2;
  Ok("RegisterScalableTarget", b);
  json t = Ok("DescribeScalableTargets", {{"ServiceNamespace", "sagemaker"}})["ScalableTargets"];
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["MinCapacity"], 1);
  EXPECT_EQ(t[0]["MaxCapacity"], 2);
  EXPECT_EQ(resources_.sets, std::vector<int>{2});
}

// A target holds at most 50 policies: the 51st is LimitExceededException, while replacing one
// of the 50 still works.
TEST_F(AutoScalingServiceTest, AFiftyFirstPolicyIsRefusedButReplacingOneIsNot) {
  Register(1, 4);
  json b = InvocationsPolicy("", 10);
  for (int i = 1; i <= 50; ++i) {
    b["PolicyName"] = "p" + std::to_string(i);
    Ok("PutScalingPolicy", b);
  }
  b["PolicyName"] = "p51";
  auto [type, msg] = Fails("PutScalingPolicy", b);
  EXPECT_EQ(type, "LimitExceededException");
  EXPECT_NE(msg.find("at most 50"), std::string::npos) << msg;
  b["PolicyName"] = "p50";
  b["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] = 20;
  Ok("PutScalingPolicy", b);
}

// Without ScaleOutCooldown a policy waits the default 300 s between scale-outs.
TEST_F(AutoScalingServiceTest, ACooldownLeftOutIsThreeHundredSeconds) {
  Register(1, 10);
  resources_.sets.clear();
  Ok("PutScalingPolicy", InvocationsPolicy("defaults", 10));
  Traffic(5, 4);  // Scale out to 3 at T.
  ASSERT_EQ(resources_.sets, std::vector<int>{3});
  Traffic(30, 28);  // 180 per minute on 3 copies until T + 280 s: held by the cooldown.
  EXPECT_EQ(resources_.sets, std::vector<int>{3});
  Traffic(30, 3);  // T + 310 s.
  EXPECT_EQ(resources_.sets, (std::vector<int>{3, 10}));
}

// The new capacity is ceil(capacity * mean / TargetValue) both ways (docs/autoscaling.md), with
// loads whose quotient is not whole: truncating would give 2 both times.
TEST_F(AutoScalingServiceTest, TheNewCapacityIsRoundedUpInBothDirections) {
  Register(1, 10);
  resources_.sets.clear();
  TrackInvocations(10);
  Traffic(4, 4);  // 24 per minute on one copy: 2.4 copies' worth.
  EXPECT_EQ(resources_.sets, std::vector<int>{3});

  clock_.Advance(600s);
  resources_.capacity[kIc] = {4, 4, "ep", ""};
  resources_.sets.clear();
  Traffic(4, 7);  // 24 per minute on 4 copies: 6 per copy, below 9, for the 60 s window.
  EXPECT_EQ(resources_.sets, std::vector<int>{3});  // ceil(4 * 6 / 10) = ceil(2.4)
}

// A scale-out's cooldown holds scale-in as well, even when ScaleInCooldown (30 s here, against
// ScaleOutCooldown's 300 s) has long passed: a load that stops right after a scale-out is not
// answered by scaling straight back in.
TEST_F(AutoScalingServiceTest, AScaleOutsCooldownHoldsScaleInToo) {
  Register(1, 10);
  resources_.sets.clear();
  TrackInvocations(10, {{"ScaleOutCooldown", 300}, {"ScaleInCooldown", 30}});
  Traffic(5, 4);  // 30 per minute on one copy: scale out to 3, at T.
  ASSERT_EQ(resources_.sets, std::vector<int>{3});
  Traffic(0, 29);  // T + 290 s: idle for far longer than the 60 s window and the 30 s cooldown.
  EXPECT_EQ(resources_.sets, std::vector<int>{3});
  Traffic(0, 2);  // T + 310 s: the scale-out's cooldown is over.
  EXPECT_EQ(resources_.sets, (std::vector<int>{3, 1}));
}

// Scale-in needs every datapoint below 90 % of the target, strictly: 95 % and exactly 90 % hold
// the capacity, 89 % scales in. A customized metric, so the values are the gauge's as set.
TEST_F(AutoScalingServiceTest, ScaleInNeedsTheMetricBelowNinetyPercentOfTheTarget) {
  Register(1, 30);
  resources_.capacity[kIc] = {20, 20, "ep", ""};
  resources_.sets.clear();
  TrackQueueDepth(10);
  depth_.Set({kAccount, "ic"}, 9.5);
  Traffic(0, 8);
  EXPECT_TRUE(resources_.sets.empty());
  depth_.Set({kAccount, "ic"}, 9.0);
  Traffic(0, 8);
  EXPECT_TRUE(resources_.sets.empty());
  depth_.Set({kAccount, "ic"}, 8.9);
  Traffic(0, 7);
  EXPECT_EQ(resources_.sets, std::vector<int>{18});  // ceil(20 * 8.9 / 10) = ceil(17.8)
}

// With two policies high at once, the larger scale-out wins, whichever policy asks for it.
TEST_F(AutoScalingServiceTest, TheLargestScaleOutOfTwoPoliciesWins) {
  Register(1, 10);
  resources_.sets.clear();
  TrackInvocations(10);  // "per-copy"
  TrackQueueDepth(5);    // "queue"
  depth_.Set({kAccount, "ic"}, 20);
  Traffic(5, 4);  // per-copy: 30 per minute on 1 copy wants 3; queue: 20 / 5 on 1 copy wants 4.
  EXPECT_EQ(resources_.sets, std::vector<int>{4});

  clock_.Advance(600s);
  resources_.capacity[kIc] = {1, 1, "ep", ""};
  resources_.sets.clear();
  depth_.Set({kAccount, "ic"}, 10);
  Traffic(10, 4);  // per-copy: 60 per minute wants 6; queue: 10 / 5 wants 2.
  EXPECT_EQ(resources_.sets, std::vector<int>{6});
}

// Step scaling applies the step whose bounds hold the number of failures, by the policy's
// AdjustmentType: each type from capacity 2 gives a different answer.
TEST_F(AutoScalingServiceTest, StepScalingAppliesTheStepHoldingTheFailuresByItsAdjustmentType) {
  Register(0, 10);
  resources_.capacity[kIc] = {2, 2, "ep", ""};
  resources_.sets.clear();
  StepOnNoCapacity({{"AdjustmentType", "ChangeInCapacity"},
                    {"StepAdjustments",
                     {{{"MetricIntervalLowerBound", 0},
                       {"MetricIntervalUpperBound", 3},
                       {"ScalingAdjustment", 1}},
                      {{"MetricIntervalLowerBound", 3}, {"ScalingAdjustment", 4}}}}});
  Traffic(0, 2);
  NoCapacity(2);  // In [0, 3): +1.
  EXPECT_EQ(resources_.sets, std::vector<int>{3});
  Traffic(0, 7);  // Past the 60 s cooldown.
  NoCapacity(3);  // In [3, inf): +4.
  EXPECT_EQ(resources_.sets, (std::vector<int>{3, 7}));

  const std::vector<std::pair<json, int>> cases = {
      {{{"AdjustmentType", "ExactCapacity"}}, 3},
      {{{"AdjustmentType", "PercentChangeInCapacity"}, {"MinAdjustmentMagnitude", 2}}, 4},
      {{{"AdjustmentType", "PercentChangeInCapacity"}}, 6},
  };
  const std::vector<int> adjustments = {3, 50, 200};
  for (size_t i = 0; i < cases.size(); ++i) {
    json config = cases[i].first;
    config["StepAdjustments"] = {
        {{"MetricIntervalLowerBound", 0}, {"ScalingAdjustment", adjustments[i]}}};
    StepOnNoCapacity(config);
    resources_.capacity[kIc] = {2, 2, "ep", ""};
    resources_.sets.clear();
    Traffic(0, 7);
    NoCapacity(1);
    EXPECT_EQ(resources_.sets, std::vector<int>{cases[i].second}) << config.dump();
  }
}

// A step policy's Cooldown holds it for exactly its seconds: a failure 50 s after a scaling
// activity is held, one at 60 s (Cooldown 60) scales again.
TEST_F(AutoScalingServiceTest, AStepPolicysCooldownEndsWhenItsSecondsHavePassed) {
  Register(0, 10);
  resources_.capacity[kIc] = {2, 2, "ep", ""};
  resources_.sets.clear();
  StepOnNoCapacity(
      {{"AdjustmentType", "ChangeInCapacity"},
       {"StepAdjustments", {{{"MetricIntervalLowerBound", 0}, {"ScalingAdjustment", 1}}}}});
  Traffic(0, 2);
  NoCapacity(1);  // T
  ASSERT_EQ(resources_.sets, std::vector<int>{3});
  Traffic(0, 4);
  NoCapacity(1);  // T + 50 s
  EXPECT_EQ(resources_.sets, std::vector<int>{3});
  NoCapacity(1);  // T + 60 s
  EXPECT_EQ(resources_.sets, (std::vector<int>{3, 4}));
}

TEST_F(AutoScalingServiceTest, AnInvocationThatFindsNoCopyScalesOutFromZeroByStepScaling) {
  Register(0, 4);
  resources_.capacity[kIc] = {0, 0, "ep", ""};
  resources_.sets.clear();
  json b = Key();
  b["PolicyName"] = "from-zero";
  b["PolicyType"] = "StepScaling";
  b["StepScalingPolicyConfiguration"] = {
      {"AdjustmentType", "ChangeInCapacity"},
      {"MetricAggregationType", "Maximum"},
      {"Cooldown", 60},
      {"StepAdjustments", {{{"MetricIntervalLowerBound", 0}, {"ScalingAdjustment", 1}}}}};
  Ok("PutScalingPolicy", b);
  Traffic(0, 2);
  EXPECT_TRUE(resources_.sets.empty());
  stats_.NoCapacity({kAccount, "ep", "ic"});
  Traffic(0, 1);
  EXPECT_EQ(resources_.sets, std::vector<int>{1});
  EXPECT_NE(Activities()[0]["Cause"].get<std::string>().find(
                "NoCapacityInvocationFailures-inference-component/ic in state ALARM triggered "
                "policy from-zero"),
            std::string::npos);
  // Step scaling on a variant is refused: its only alarm is a component's.
  b = Key("endpoint/ep/variant/AllTraffic", std::string(kInstanceCount));
  b["MinCapacity"] = 1;
  b["MaxCapacity"] = 3;
  Ok("RegisterScalableTarget", b);
  b.erase("MinCapacity");
  b.erase("MaxCapacity");
  b["PolicyName"] = "steps";
  b["StepScalingPolicyConfiguration"] = {
      {"AdjustmentType", "ChangeInCapacity"},
      {"StepAdjustments", {{{"MetricIntervalLowerBound", 0}, {"ScalingAdjustment", 1}}}}};
  auto [type, msg] = Fails("PutScalingPolicy", b);
  EXPECT_NE(msg.find("NoCapacityInvocationFailures only"), std::string::npos) << msg;
}

TEST_F(AutoScalingServiceTest, ARestartKeepsPoliciesAndDoesNotScaleOnItsFirstSamples) {
  Register(1, 10);
  TrackInvocations(10);
  resources_.sets.clear();
  Traffic(5, 3);
  Restart();  // Samples are gone; the records stay.
  json p = Ok("DescribeScalingPolicies", {{"ServiceNamespace", "sagemaker"}})["ScalingPolicies"];
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0]["PolicyName"], "per-copy");
  Traffic(5, 3);
  EXPECT_TRUE(resources_.sets.empty()) << "a fresh process must not scale on a partial window";
  Traffic(5, 1);
  EXPECT_EQ(resources_.sets, std::vector<int>{3});
}

TEST_F(AutoScalingServiceTest, AScheduledActionSetsTheBoundsWhenItIsDue) {
  Register(1, 3);
  resources_.sets.clear();
  const int64_t at_ms = clock_.UnixMillis() + 25'000;
  const std::time_t at = at_ms / 1000 + 1;
  std::tm tm{};
  gmtime_r(&at, &tm);
  char when[64];
  std::strftime(when, sizeof when, "at(%Y-%m-%dT%H:%M:%S)", &tm);
  json b = Key();
  b["ScheduledActionName"] = "morning";
  b["Schedule"] = when;
  b["ScalableTargetAction"] = {{"MinCapacity", 2}, {"MaxCapacity", 5}};
  Ok("PutScheduledAction", b);
  Traffic(0, 2);
  EXPECT_TRUE(resources_.sets.empty());
  Traffic(0, 1);
  EXPECT_EQ(resources_.sets, std::vector<int>{2});
  json t = Ok("DescribeScalableTargets", {{"ServiceNamespace", "sagemaker"}})["ScalableTargets"];
  EXPECT_EQ(t[0]["MinCapacity"], 2);
  EXPECT_EQ(t[0]["MaxCapacity"], 5);
  json a = Activities();
  ASSERT_EQ(a.size(), 2u);
  // Each activity has its own ActivityId, the scheduled action's as well.
  for (const json& act : a) EXPECT_FALSE(act.value("ActivityId", "").empty()) << act.dump();
  EXPECT_NE(a[0]["ActivityId"], a[1]["ActivityId"]);
  EXPECT_EQ(a[1]["Description"], "Setting min capacity to 2 and max capacity to 5");
  EXPECT_NE(a[1]["Cause"].get<std::string>().find("scheduled action name morning was triggered"),
            std::string::npos);
  Traffic(0, 10);  // at() fires once.
  EXPECT_EQ(resources_.sets, std::vector<int>{2});
  b["Schedule"] = "cron(0 8 * * ? *)";
  auto [type, msg] = Fails("PutScheduledAction", b);
  EXPECT_NE(msg.find("does not implement cron"), std::string::npos) << msg;
  // Its bounds obey the target's rule: a minimum above the maximum is refused, naming both.
  b["Schedule"] = "rate(1 hour)";
  b["ScalableTargetAction"] = {{"MinCapacity", 5}, {"MaxCapacity", 2}};
  std::tie(type, msg) = Fails("PutScheduledAction", b);
  EXPECT_EQ(type, "ValidationException");
  EXPECT_EQ(msg, "Minimum capacity 5 cannot be greater than maximum capacity 2");
}

TEST_F(AutoScalingServiceTest, AnActivityIsInProgressUntilTheCopiesServe) {
  Register(1, 10);
  TrackInvocations(10);
  resources_.instant = false;
  resources_.capacity[kIc].status_message = "2 of 3 copies are not placed: waiting for a partition";
  Traffic(5, 4);
  json a = Activities();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["StatusCode"], "InProgress");
  Traffic(0, 1);
  a = Activities();
  EXPECT_EQ(a[0]["StatusMessage"], "2 of 3 copies are not placed: waiting for a partition");
  resources_.capacity[kIc].current = 3;
  Traffic(0, 1);
  a = Activities();
  EXPECT_EQ(a[0]["StatusCode"], "Successful");
  EXPECT_TRUE(a[0].contains("EndTime"));
}

TEST_F(AutoScalingServiceTest, ACustomizedMetricNamesOneOfCarvesOwnSeries) {
  Register(1, 10);
  resources_.sets.clear();
  json b = Key();
  b["PolicyName"] = "queue";
  b["PolicyType"] = "TargetTrackingScaling";
  json custom = {{"Namespace", "carve"},
                 {"MetricName", "carve_test_queue_depth"},
                 {"Dimensions", {{{"Name", "component"}, {"Value", "ic"}}}},
                 {"Statistic", "Average"}};
  b["TargetTrackingScalingPolicyConfiguration"] = {{"TargetValue", 10},
                                                   {"CustomizedMetricSpecification", custom}};
  Ok("PutScalingPolicy", b);
  depth_.Set({kAccount, "ic"}, 30);
  depth_.Set({kAccount, "other"}, 1000);     // Not matched by the dimension.
  depth_.Set({"222222222222", "ic"}, 1000);  // Another account's "ic": never read.
  Traffic(0, 3);
  EXPECT_TRUE(resources_.sets.empty());
  Traffic(0, 1);
  EXPECT_EQ(resources_.sets, std::vector<int>{3});  // ceil(1 * 30 / 10)

  for (auto [member, value, want] :
       {std::tuple<std::string, json, std::string>{"MetricName", "carve_nope",
                                                   "carve exports no metric carve_nope"},
        {"Namespace", "AWS/SageMaker",
         "at 'targetTrackingScalingPolicyConfiguration."
         "customizedMetricSpecification.namespace'"},
        {"Dimensions", json::array({{{"Name", "gpu"}, {"Value", "0"}}}),
         "carve_test_queue_depth has no label gpu"},
        {"Dimensions", json::array({{{"Name", "account"}, {"Value", "222222222222"}}}),
         "must be the policy's own account, 111111111111"},
        // A family kept per fleet, not per account, is not a policy's to read.
        {"MetricName", "carve_test_fleet_depth", "carve_test_fleet_depth has no label account"}}) {
    json bad = b;
    bad["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"][member] =
        value;
    auto [type, msg] = Fails("PutScalingPolicy", bad);
    EXPECT_EQ(type, "ValidationException") << msg;
    EXPECT_NE(msg.find(want), std::string::npos) << member << ": " << msg;
  }
}

TEST_F(AutoScalingServiceTest, DescribeScalableTargetsPages) {
  for (const char* ic : {"a", "b", "c"}) {
    resources_.capacity[std::string("inference-component/") + ic] = {1, 1, "ep", ""};
    json b = Key(std::string("inference-component/") + ic);
    b["MinCapacity"] = 1;
    b["MaxCapacity"] = 2;
    Ok("RegisterScalableTarget", b);
  }
  json first =
      Ok("DescribeScalableTargets", {{"ServiceNamespace", "sagemaker"}, {"MaxResults", 2}});
  ASSERT_EQ(first["ScalableTargets"].size(), 2u);
  ASSERT_TRUE(first.contains("NextToken"));
  json second =
      Ok("DescribeScalableTargets",
         {{"ServiceNamespace", "sagemaker"}, {"MaxResults", 2}, {"NextToken", first["NextToken"]}});
  ASSERT_EQ(second["ScalableTargets"].size(), 1u);
  EXPECT_FALSE(second.contains("NextToken"));
  EXPECT_EQ(second["ScalableTargets"][0]["ResourceId"], "inference-component/c");
  auto [type, msg] =
      Fails("DescribeScalableTargets", {{"ServiceNamespace", "sagemaker"}, {"NextToken", "bogus"}});
  EXPECT_EQ(type, "ValidationException");
  // The service's bounds: MaxResults 1 to 50, a NextToken of at most 2048 characters.
  json one = Ok("DescribeScalableTargets", {{"ServiceNamespace", "sagemaker"}, {"MaxResults", 1}});
  EXPECT_EQ(one["ScalableTargets"].size(), 1u);
  for (int bad : {0, 51}) {
    std::tie(type, msg) =
        Fails("DescribeScalableTargets", {{"ServiceNamespace", "sagemaker"}, {"MaxResults", bad}});
    EXPECT_NE(msg.find("maxResults"), std::string::npos) << bad << ": " << msg;
  }
  std::tie(type, msg) = Fails("DescribeScalableTargets", {{"ServiceNamespace", "sagemaker"},
                                                          {"NextToken", std::string(2049, 'a')}});
  EXPECT_NE(msg.find("length less than or equal to 2048"), std::string::npos) << msg.substr(0, 200);
}

// A target keeps its newest activities only (max_activities_per_target, 100 by default; 3
// here): five scalings leave the last three.
TEST_F(AutoScalingServiceTest, ATargetKeepsItsNewestActivitiesOnly) {
  Restart(3);
  for (int min = 2; min <= 6; ++min) Register(min, min + 1);  // Each raises the capacity by 1.
  EXPECT_EQ(resources_.sets, (std::vector<int>{2, 3, 4, 5, 6}));
  json a = Activities();
  ASSERT_EQ(a.size(), 3u) << a.dump();
  std::vector<std::string> descriptions;
  for (const json& act : a) descriptions.push_back(act["Description"]);
  for (const char* want : {"to 6", "to 5", "to 4"}) {
    EXPECT_TRUE(std::any_of(descriptions.begin(), descriptions.end(), [&](const std::string& d) {
      return d.find(want) != std::string::npos;
    })) << want;
  }
}

// The signals /metrics shows are the last sample's: invocations per minute per copy and
// requests in flight per copy, each divided by the component's 2 copies.
TEST_F(AutoScalingServiceTest, TheSignalsAreTheLastSamplesRatePerCopyAndInFlight) {
  resources_.capacity[kIc] = {2, 2, "ep", ""};
  Register(1, 10);
  for (int i = 0; i < 4; ++i) stats_.Started({kAccount, "ep", "ic"});
  Traffic(6, 2);  // 6 in each 10 s: 36 per minute.
  auto signals = service_->Signals();
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0].capacity, 2);
  EXPECT_DOUBLE_EQ(signals[0].invocations_per_unit, 18.0);
  EXPECT_DOUBLE_EQ(signals[0].concurrent_per_copy, 2.0);
}

}  // namespace
}  // namespace carve::server::autoscaling
