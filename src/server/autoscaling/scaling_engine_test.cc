// The engine's decisions tick by tick: target tracking and step scaling, cooldowns, several
// policies, scheduled actions, activities and the signals /metrics shows (the fixture:
// autoscaling_test_fixture.h).
#include "server/autoscaling/autoscaling_test_fixture.h"

namespace carve::server::autoscaling {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

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

// docs/autoscaling.md, "High": every datapoint of the window must be above the target, not their
// mean. One empty datapoint among full ones holds the scale-out until it leaves the window.
TEST_F(AutoScalingServiceTest, OneDatapointBelowTheTargetHoldsAScaleOutUntilItLeavesTheWindow) {
  Register(1, 10);
  resources_.sets.clear();
  TrackInvocations(10);  // Invocations per copy per minute.
  Traffic(5, 2);         // 30 per minute: the base sample, then one datapoint of 30
  Traffic(0, 1);         // a datapoint of 0
  Traffic(5, 1);         // 30, 0, 30: a mean of 20 is above 10, but one datapoint is not
  EXPECT_TRUE(resources_.sets.empty());
  Traffic(5, 1);  // 0, 30, 30
  EXPECT_TRUE(resources_.sets.empty());
  Traffic(5, 1);  // 30, 30, 30
  EXPECT_EQ(resources_.sets, std::vector<int>{3});  // ceil(1 * 30 / 10)
}

// docs/autoscaling.md, "High": the new capacity is ceil(capacity * mean / TargetValue), the mean
// of the window's datapoints: not the last, the largest or the smallest of them.
TEST_F(AutoScalingServiceTest, TheNewCapacityFollowsTheMeanOfTheWindowsDatapoints) {
  Register(1, 10);
  resources_.sets.clear();
  TrackInvocations(10);
  Traffic(9, 1);  // the base sample
  Traffic(2, 1);  // 12 per minute
  Traffic(4, 1);  // 24
  Traffic(6, 1);  // 36: every datapoint above 10, their mean 24
  // ceil(1 * 24 / 10) = 3; the last or largest (36) would give 4, the smallest (12) 2.
  EXPECT_EQ(resources_.sets, std::vector<int>{3});
}

// docs/autoscaling.md, the metric table: invocations per copy are divided by the desired copy
// count, not the copies serving. Two of four desired copies serve: 60 invocations a minute are
// 15 per desired copy (under the target of 20) though 30 per serving copy.
TEST_F(AutoScalingServiceTest, InvocationsPerCopyAreDividedByTheDesiredCopies) {
  Register(1, 10);
  resources_.capacity[kIc] = {4, 2, "ep", ""};
  resources_.sets.clear();
  TrackInvocations(20);
  Traffic(10, 4);  // 60 per minute over the whole 30 s window
  EXPECT_TRUE(resources_.sets.empty());  // by the serving copies: ceil(4 * 30 / 20) = 6
  Traffic(20, 4);  // 120 per minute: 30 per desired copy
  EXPECT_EQ(resources_.sets, std::vector<int>{6});  // ceil(4 * 30 / 20)
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
  Ok("PutScalingPolicy", QueueDepthPolicy("queue", "ic", "Average"));
  depth_.Set({kAccount, "ic"}, 10);  // Exactly at its target: neither high nor low.
  Traffic(0, 12);
  EXPECT_TRUE(resources_.sets.empty());
  depth_.Set({kAccount, "ic"}, 5);  // Now both want fewer copies.
  Traffic(0, 7);
  EXPECT_EQ(resources_.sets, std::vector<int>{2});  // max(1, ceil(4 * 5 / 10))
}

// A customized metric whose dimensions match no series of its family is no data, whatever the
// statistic: nothing scales (and a Minimum or Maximum of nothing is never read).
TEST_F(AutoScalingServiceTest, ACustomizedMetricMatchingNoSeriesIsNoDataForEveryStatistic) {
  Register(1, 10);
  resources_.capacity[kIc] = {4, 4, "ep", ""};
  depth_.Set({kAccount, "ic"}, 50);  // Another component's series; none for "nobody".
  for (const char* statistic : {"Average", "Minimum", "Maximum"}) {
    resources_.sets.clear();
    Ok("PutScalingPolicy",
       QueueDepthPolicy(std::string("empty-") + statistic, "nobody", statistic));
    Traffic(0, 12);
    EXPECT_TRUE(resources_.sets.empty()) << statistic;
    json del = Key();
    del["PolicyName"] = std::string("empty-") + statistic;
    Ok("DeleteScalingPolicy", del);
  }
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

// docs/autoscaling.md, "Activities": a later activity that changes the capacity first marks an
// activity still InProgress Overridden; the later one stays InProgress until its copies serve.
TEST_F(AutoScalingServiceTest, ALaterActivityOverridesOneStillInProgress) {
  Register(1, 10);
  TrackInvocations(10);
  resources_.instant = false;  // No copy ever serves.
  Traffic(5, 4);               // 1 -> 3
  Traffic(60, 7);              // past the 60 s cooldown: 3 -> 10
  ASSERT_EQ(resources_.sets, (std::vector<int>{3, 10}));
  Traffic(0, 1);
  std::map<std::string, std::string> status;
  for (const json& a : Activities()) status[a["Description"]] = a["StatusCode"];
  EXPECT_EQ(status["Setting desired copy count to 3."], "Overridden");
  EXPECT_EQ(status["Setting desired copy count to 10."], "InProgress");
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
