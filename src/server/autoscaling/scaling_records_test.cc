#include "server/autoscaling/scaling_records.h"

#include <gtest/gtest.h>

namespace carve::server::autoscaling {
namespace {

using nlohmann::json;

TEST(ScalableKeyTest, AcceptsTheTwoSageMakerDimensionsAndTheirResourceIds) {
  EXPECT_TRUE(ValidateKey({std::string(kCopyCount), "inference-component/ic-1"}).ok());
  EXPECT_TRUE(ValidateKey({std::string(kInstanceCount), "endpoint/ep/variant/AllTraffic"}).ok());
  ScalableKey k{std::string(kInstanceCount), "endpoint/ep/variant/AllTraffic"};
  EXPECT_EQ(k.Endpoint(), "ep");
  EXPECT_EQ(k.Variant(), "AllTraffic");
  EXPECT_EQ((ScalableKey{std::string(kCopyCount), "inference-component/ic"}).Component(), "ic");

  auto bad = ValidateKey({std::string(kCopyCount), "endpoint/ep/variant/v"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("inference-component/<inference component name>"),
            std::string::npos)
      << bad.error().message;
  EXPECT_FALSE(ValidateKey({std::string(kInstanceCount), "endpoint/ep/v"}).ok());
  EXPECT_FALSE(ValidateKey({std::string(kCopyCount), "inference-component/bad name"}).ok());
  EXPECT_FALSE(ValidateKey({"ecs:service:DesiredCount", "service/c/s"}).ok());
}

TEST(ScheduleTest, AtAndRateParseAndCronIsRefusedByName) {
  auto at = ParseSchedule("at(2026-12-01T19:00:00)");
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->at_ms, 1796151600000);
  auto rate = ParseSchedule("rate(5 minutes)");
  ASSERT_TRUE(rate.has_value());
  EXPECT_EQ(rate->period_ms, 300'000);
  EXPECT_EQ(ParseSchedule("rate(1 day)")->period_ms, 86'400'000);
  auto cron = ParseSchedule("cron(0 18 * * ? *)");
  ASSERT_FALSE(cron.has_value());
  EXPECT_NE(cron.error().message.find("does not implement cron"), std::string::npos);
  EXPECT_FALSE(ParseSchedule("at(2026-13-01T19:00:00)").has_value());
  EXPECT_FALSE(ParseSchedule("rate(0 minutes)").has_value());
  EXPECT_FALSE(ParseSchedule("rate(5 seconds)").has_value());
}

// The hand-written parser (no std::regex since issue 35) keeps the old grammar's edges.
TEST(ScheduleTest, RefusesNearMissesOfTheGrammar) {
  EXPECT_EQ(ParseSchedule("rate(9999999 minutes)")->period_ms, 9'999'999LL * 60'000);
  for (const char* bad :
       {"rate(10000000 minutes)", "rate(05 minutes)", "rate( 5 minutes)", "rate(5  minutes)",
        "rate(5 minutes", "rate(5 minutes) ", "rate(-5 minutes)", "rate(5 Minutes)", "rate()",
        "at(2026-12-01T19:00)", "at(2026-12-01 19:00:00)", "at(26-12-01T19:00:00)",
        "at(2026-12-01T19:00:00", "at(2026-12-01T19:00:0x)", "at(2026-00-01T19:00:00)",
        "at(2026-12-01T24:00:00)", ""}) {
    EXPECT_FALSE(ParseSchedule(bad).has_value()) << bad;
  }
}

TEST(ScheduleTest, QuotesABoundedPreviewOfALongSchedule) {
  auto r = ParseSchedule("rate(" + std::string(50000, '1'));
  ASSERT_FALSE(r.has_value());
  EXPECT_LT(r.error().message.size(), 500u);
}

TEST(ScheduleTest, NextRunHonoursStartAndEnd) {
  ScheduledAction once;
  once.schedule = "at(2026-12-01T19:00:00)";
  EXPECT_EQ(once.NextRun(0), 1796151600000);
  EXPECT_FALSE(once.NextRun(1796151600000).has_value());  // It ran.
  ScheduledAction every;
  every.schedule = "rate(1 minute)";
  every.created_ms = 1'000'000;
  EXPECT_EQ(every.NextRun(1'000'000), 1'060'000);
  EXPECT_EQ(every.NextRun(1'060'000), 1'120'000);
  every.end_ms = 1'100'000;
  EXPECT_FALSE(every.NextRun(1'060'000).has_value());
  // EndTime itself is inside the schedule: a run due exactly then still runs.
  every.end_ms = 1'120'000;
  EXPECT_EQ(every.NextRun(1'060'000), 1'120'000);
  // StartTime, when given, is where the periods count from, not the creation time.
  every.end_ms = 0;
  every.start_ms = 1'030'000;
  EXPECT_EQ(every.NextRun(1'000'000), 1'030'000);
  EXPECT_EQ(every.NextRun(1'030'000), 1'090'000);
}

TEST(ScalingRecordsTest, EachSurvivesItsRecord) {
  ScalableTarget t;
  t.key = {std::string(kCopyCount), "inference-component/ic"};
  t.min = 0;
  t.max = 8;
  t.scale_in_suspended = true;
  t.created_ms = 1234;
  t.arn = "arn:x";
  EXPECT_EQ(ScalableTarget::FromJson(t.ToJson())->ToJson(), t.ToJson());
  ScalingPolicy p;
  p.key = t.key;
  p.name = "p";
  p.type = "TargetTrackingScaling";
  p.config = {{"TargetValue", 5.0},
              {"PredefinedMetricSpecification",
               {{"PredefinedMetricType", "SageMakerInferenceComponentInvocationsPerCopy"}}}};
  p.last_scale_out_ms = 77;
  auto read = ScalingPolicy::FromJson(p.ToJson());
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(read->ToJson(), p.ToJson());
  EXPECT_EQ(std::get<TargetTrackingSpec>(read->spec).target_value, 5.0);
  ScalingActivity a;
  a.key = t.key;
  a.id = "id";
  a.start_ms = 5;
  a.desired = 3;
  a.status = "InProgress";
  EXPECT_EQ(ScalingActivity::FromJson(a.ToJson())->ToJson(), a.ToJson());
  EXPECT_EQ(a.Name(),
            "sagemaker:inference-component:DesiredCopyCount inference-component/ic "
            "0000000000000005 00000000 id");
  EXPECT_FALSE(ScalableTarget::FromJson(json::object()).has_value());
}

}  // namespace
}  // namespace carve::server::autoscaling
