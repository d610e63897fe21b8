// AutoScalingService's operations as Application Auto Scaling answers them: validation, errors,
// the records they keep, paging (the fixture: autoscaling_test_fixture.h).
#include <regex>

#include "server/autoscaling/autoscaling_test_fixture.h"

namespace carve::server::autoscaling {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Issue 35: bodies nested past the depth limit, repeated keys and bytes that are not UTF-8 are
// each a ValidationException naming the rule, never a crash or an escaping exception.
TEST_F(AutoScalingServiceTest, RefusesDeepDuplicateAndNonUtf8BodiesNamingTheRule) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const auto& [body, rule] : std::vector<std::pair<std::string, std::string>>{
           {R"({"ServiceNamespace":)" + deep + "}", "deeper than 64 levels (the JSON depth limit)"},
           {R"({"ServiceNamespace":"sagemaker","ServiceNamespace":"x"})",
            R"(has the key "ServiceNamespace" more than once)"},
           {"{\"ServiceNamespace\":\"\xff\"}", "is not valid JSON"}}) {
    http::ApiResponse r = service_->Handle({"DescribeScalableTargets", body, kAccount, "req"});
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

// Every StepAdjustment is checked, the first as much as the others, each named by its position.
TEST_F(AutoScalingServiceTest, EveryStepAdjustmentIsValidatedNamingItsPosition) {
  Register(0, 4);
  for (size_t bad : {0u, 1u}) {
    json steps = json::array({{{"MetricIntervalLowerBound", 0}, {"ScalingAdjustment", 1}},
                              {{"MetricIntervalLowerBound", 5}, {"ScalingAdjustment", 2}}});
    steps[bad].erase("ScalingAdjustment");
    json b = Key();
    b["PolicyName"] = "steps";
    b["PolicyType"] = "StepScaling";
    b["StepScalingPolicyConfiguration"] = {{"AdjustmentType", "ChangeInCapacity"},
                                           {"StepAdjustments", steps}};
    auto [type, msg] = Fails("PutScalingPolicy", b);
    EXPECT_EQ(type, "ValidationException") << bad;
    EXPECT_NE(msg.find("stepScalingPolicyConfiguration.stepAdjustments." + std::to_string(bad + 1) +
                       ".member.scalingAdjustment"),
              std::string::npos)
        << msg;
  }
}

// A server built without a metrics registry reads no customized metrics: a policy naming one is
// refused, naming the member, rather than stored to never scale.
TEST_F(AutoScalingServiceTest, WithoutAMetricsRegistryACustomizedMetricIsRefused) {
  AutoScalingOptions o;
  o.clock = &clock_;
  o.metrics = nullptr;
  service_ = std::make_unique<AutoScalingService>(store_, resources_, stats_, o);
  Register(0, 4);
  json b = Key();
  b["PolicyName"] = "custom";
  b["PolicyType"] = "TargetTrackingScaling";
  b["TargetTrackingScalingPolicyConfiguration"] = {
      {"TargetValue", 5},
      {"CustomizedMetricSpecification",
       {{"Namespace", "carve"}, {"MetricName", "carve_queue_depth"}, {"Statistic", "Average"}}}};
  auto [type, msg] = Fails("PutScalingPolicy", b);
  EXPECT_EQ(type, "ValidationException");
  EXPECT_NE(msg.find("customizedMetricSpecification.metricName"), std::string::npos) << msg;
  EXPECT_NE(msg.find("this server reads no customized metrics"), std::string::npos) << msg;
}

// Each of SuspendedState's three members sets its own flag, and only it.
TEST_F(AutoScalingServiceTest, EachSuspendedStateMemberSetsItsOwnFlag) {
  for (const char* member :
       {"DynamicScalingInSuspended", "DynamicScalingOutSuspended", "ScheduledScalingSuspended"}) {
    json b = Key();
    b["MinCapacity"] = 0;
    b["MaxCapacity"] = 4;
    b["SuspendedState"] = {{member, true}};
    Ok("RegisterScalableTarget", b);
    json t =
        Ok("DescribeScalableTargets", {{"ServiceNamespace", "sagemaker"}})["ScalableTargets"][0];
    for (const char* other :
         {"DynamicScalingInSuspended", "DynamicScalingOutSuspended", "ScheduledScalingSuspended"}) {
      EXPECT_EQ(t["SuspendedState"][other], std::string(other) == member) << member << " " << other;
    }
    Ok("DeregisterScalableTarget", Key());
  }
}

// A variant's resource id names an endpoint and a variant, each a SageMaker name.
TEST_F(AutoScalingServiceTest, AVariantResourceIdIsRefusedForABadVariantName) {
  for (const char* id : {"endpoint/ep/variant/bad name", "endpoint/bad name/variant/AllTraffic",
                         "endpoint/ep/variants/AllTraffic", "endpoint/ep/variant"}) {
    json b = Key(id, std::string(kInstanceCount));
    b["MinCapacity"] = 1;
    b["MaxCapacity"] = 4;
    auto [type, msg] = Fails("RegisterScalableTarget", b);
    EXPECT_NE(msg.find("it must be endpoint/<endpoint name>/variant/<variant name>"),
              std::string::npos)
        << id << ": " << msg;
  }
}

// A scheduled action that sets one bound shows that bound only.
TEST_F(AutoScalingServiceTest, AScheduledActionShowsOnlyTheBoundsItSets) {
  Register(0, 4);
  json a = Key();
  a["ScheduledActionName"] = "night";
  a["Schedule"] = "rate(1 day)";
  a["ScalableTargetAction"] = {{"MaxCapacity", 3}};
  Ok("PutScheduledAction", a);
  json d =
      Ok("DescribeScheduledActions", {{"ServiceNamespace", "sagemaker"}})["ScheduledActions"][0];
  EXPECT_EQ(d["ScalableTargetAction"], (json{{"MaxCapacity", 3}})) << d.dump();
}

// A predefined metric without its type is one validation error, naming the member.
TEST_F(AutoScalingServiceTest, APredefinedMetricWithoutItsTypeIsOneError) {
  Register(0, 4);
  json b = InvocationsPolicy("p", 5);
  b["TargetTrackingScalingPolicyConfiguration"]["PredefinedMetricSpecification"] = json::object();
  auto [type, msg] = Fails("PutScalingPolicy", b);
  EXPECT_EQ(type, "ValidationException");
  EXPECT_EQ(msg.rfind("1 validation error detected: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("predefinedMetricSpecification.predefinedMetricType"), std::string::npos)
      << msg;
}

// A scalable target's ARN in Application Auto Scaling's form (the API reference's example:
// scalable-target/ and 36 lowercase hex digits), distinct per target.
TEST_F(AutoScalingServiceTest, AScalableTargetsArnHasTheServicesForm) {
  json b = Key();
  b["MinCapacity"] = 0;
  b["MaxCapacity"] = 4;
  const std::string arn = Ok("RegisterScalableTarget", b)["ScalableTargetARN"];
  EXPECT_TRUE(
      std::regex_match(arn, std::regex("arn:aws:application-autoscaling:us-east-1:111111111111:"
                                       "scalable-target/[0-9a-f]{36}")))
      << arn;
  json v = Key("endpoint/ep/variant/AllTraffic", std::string(kInstanceCount));
  v["MinCapacity"] = 1;
  v["MaxCapacity"] = 4;
  EXPECT_NE(Ok("RegisterScalableTarget", v)["ScalableTargetARN"], arn);
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

}  // namespace
}  // namespace carve::server::autoscaling
