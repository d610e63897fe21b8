#include "server/autoscaling/policy_spec.h"

#include <gtest/gtest.h>

namespace carve::server::autoscaling {
namespace {

using nlohmann::json;

TEST(ParsePolicySpec, ATargetTrackingConfigurationWithEveryMember) {
  auto spec = ParsePolicySpec(
      "TargetTrackingScaling",
      json{{"TargetValue", 7.5},
           {"ScaleOutCooldown", 30},
           {"ScaleInCooldown", 600},
           {"DisableScaleIn", true},
           {"PredefinedMetricSpecification",
            {{"PredefinedMetricType",
              "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"}}}});
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  const auto& t = std::get<TargetTrackingSpec>(*spec);
  EXPECT_EQ(t.target_value, 7.5);
  EXPECT_EQ(t.metric, TrackedMetric::kConcurrentRequestsPerCopyHighResolution);
  EXPECT_EQ(t.scale_out_cooldown, std::chrono::seconds(30));
  EXPECT_EQ(t.scale_in_cooldown, std::chrono::seconds(600));
  EXPECT_TRUE(t.disable_scale_in);
}

TEST(ParsePolicySpec, CooldownsDefaultToThreeHundredSecondsEach) {
  auto spec =
      ParsePolicySpec("TargetTrackingScaling",
                      json{{"TargetValue", 1},
                           {"PredefinedMetricSpecification",
                            {{"PredefinedMetricType", "SageMakerVariantInvocationsPerInstance"}}}});
  ASSERT_TRUE(spec.has_value());
  const auto& t = std::get<TargetTrackingSpec>(*spec);
  EXPECT_EQ(t.metric, TrackedMetric::kInvocationsPerInstance);
  EXPECT_EQ(t.scale_out_cooldown, std::chrono::seconds(300));
  EXPECT_EQ(t.scale_in_cooldown, std::chrono::seconds(300));
  EXPECT_FALSE(t.disable_scale_in);
}

TEST(ParsePolicySpec, ACustomizedMetricKeepsItsNameStatisticAndDimensions) {
  auto spec = ParsePolicySpec(
      "TargetTrackingScaling",
      json{{"TargetValue", 3},
           {"CustomizedMetricSpecification",
            {{"Namespace", "carve"},
             {"MetricName", "carve_queue_depth"},
             {"Statistic", "Maximum"},
             {"Dimensions", {{{"Name", "queue"}, {"Value", "q1"}}, {{"Name", 5}}}}}}});
  ASSERT_TRUE(spec.has_value());
  const auto& t = std::get<TargetTrackingSpec>(*spec);
  EXPECT_EQ(t.metric, TrackedMetric::kCustomized);
  EXPECT_EQ(t.customized.name, "carve_queue_depth");
  EXPECT_EQ(t.customized.statistic, Statistic::kMaximum);
  EXPECT_EQ(t.customized.dimensions, (std::map<std::string, std::string>{{"queue", "q1"}}));
}

TEST(ParsePolicySpec, AStepConfigurationWithOpenBounds) {
  auto spec = ParsePolicySpec(
      "StepScaling", json{{"AdjustmentType", "PercentChangeInCapacity"},
                          {"MinAdjustmentMagnitude", 2},
                          {"Cooldown", 45},
                          {"StepAdjustments",
                           {{{"MetricIntervalUpperBound", 5}, {"ScalingAdjustment", 10}},
                            {{"MetricIntervalLowerBound", 5}, {"ScalingAdjustment", 50}}}}});
  ASSERT_TRUE(spec.has_value());
  const auto& s = std::get<StepScalingSpec>(*spec);
  EXPECT_EQ(s.adjustment_type, AdjustmentType::kPercentChangeInCapacity);
  EXPECT_EQ(s.min_adjustment_magnitude, 2);
  EXPECT_EQ(s.cooldown, std::chrono::seconds(45));
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].lower, -HUGE_VAL);
  EXPECT_EQ(s.steps[0].upper, 5);
  EXPECT_EQ(s.steps[0].adjustment, 10);
  EXPECT_EQ(s.steps[1].lower, 5);
  EXPECT_EQ(s.steps[1].upper, HUGE_VAL);
}

TEST(ParsePolicySpec, AMalformedConfigurationIsRefusedNamingWhatIsWrong) {
  auto no_target = ParsePolicySpec("TargetTrackingScaling", json::object());
  ASSERT_FALSE(no_target.has_value());
  EXPECT_NE(no_target.error().message.find("TargetValue"), std::string::npos)
      << no_target.error().message;
  auto bad_metric = ParsePolicySpec(
      "TargetTrackingScaling",
      json{{"TargetValue", 1}, {"PredefinedMetricSpecification", {{"PredefinedMetricType", "X"}}}});
  ASSERT_FALSE(bad_metric.has_value());
  EXPECT_NE(bad_metric.error().message.find("'X'"), std::string::npos);
  auto bad_type = ParsePolicySpec(
      "StepScaling", json{{"AdjustmentType", "Doubling"}, {"StepAdjustments", json::array()}});
  ASSERT_FALSE(bad_type.has_value());
  EXPECT_NE(bad_type.error().message.find("AdjustmentType 'Doubling'"), std::string::npos);
  EXPECT_FALSE(ParsePolicySpec("PredictiveScaling", json::object()).has_value());
}

TEST(CustomMetricMatch, ThePolicysAccountIsAlwaysOneOfTheMatchers) {
  auto m = CustomMetricMatch({{"queue", "q1"}}, "111111111111");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(*m, (std::map<std::string, std::string>{{"account", "111111111111"}, {"queue", "q1"}}));
  EXPECT_TRUE(CustomMetricMatch({{"account", "111111111111"}}, "111111111111").has_value());
  auto other = CustomMetricMatch({{"account", "222222222222"}}, "111111111111");
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.error().message.find("own account, 111111111111"), std::string::npos);
}

}  // namespace
}  // namespace carve::server::autoscaling
