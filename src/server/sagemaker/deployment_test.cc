// The rolling-update rule (deployment.h) on its own, step by step on a clock the test sets.
#include "server/sagemaker/deployment.h"

#include <gtest/gtest.h>

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;
using Kind = DeploymentStep::Kind;

constexpr int64_t kT0 = 1'000'000;

Deployment Rolling(int batch, int wait_s, int timeout_s = 0) {
  json policy = {{"MaximumBatchSize", {{"Type", "COPY_COUNT"}, {"Value", batch}}},
                 {"WaitIntervalInSeconds", wait_s}};
  if (timeout_s > 0) policy["MaximumExecutionTimeoutInSeconds"] = timeout_s;
  return StartDeployment({{"RollingUpdatePolicy", policy}}, CopySpec{}, kT0).deployment;
}

TEST(CapacitySizeTest, CountsCopiesOfTheDesiredCountAtLeastOne) {
  EXPECT_EQ((CapacitySize{CapacitySize::Type::kCapacityPercent, 20}).Copies(7), 2);  // ceil 1.4
  EXPECT_EQ((CapacitySize{CapacitySize::Type::kCapacityPercent, 50}).Copies(4), 2);
  EXPECT_EQ((CapacitySize{CapacitySize::Type::kCapacityPercent, 5}).Copies(3), 1);
  EXPECT_EQ((CapacitySize{CapacitySize::Type::kCopyCount, 10}).Copies(3), 3);
  EXPECT_EQ((CapacitySize{CapacitySize::Type::kCopyCount, 2}).Copies(0), 1);
}

TEST(DeploymentTest, WithoutAConfigEveryCopyIsReplacedAtOnce) {
  StartedDeployment s = StartDeployment(nullptr, CopySpec{}, kT0);
  EXPECT_EQ(s.deployment.BatchSize(6), 6);
  EXPECT_EQ(s.deployment.wait_s, 0);
  EXPECT_EQ(s.last_config["RollingUpdatePolicy"]["MaximumBatchSize"],
            (json{{"Type", "CAPACITY_PERCENT"}, {"Value", 100}}));
  DeploymentStep step = NextDeploymentStep(s.deployment, {6, 0, 0, 6}, "", kT0);
  EXPECT_EQ(step.place, 6);
  EXPECT_TRUE(step.new_batch);
}

TEST(DeploymentTest, TheConfigAsGivenIsTheLastDeploymentConfig) {
  json config = {{"RollingUpdatePolicy",
                  {{"MaximumBatchSize", {{"Type", "CAPACITY_PERCENT"}, {"Value", 25}}},
                   {"WaitIntervalInSeconds", 30},
                   {"MaximumExecutionTimeoutInSeconds", 900},
                   {"RollbackMaximumBatchSize", {{"Type", "COPY_COUNT"}, {"Value", 3}}}}}};
  StartedDeployment s = StartDeployment(config, CopySpec{}, kT0);
  EXPECT_EQ(s.last_config, config);
  EXPECT_EQ(s.deployment.BatchSize(8), 2);  // 25 % of 8
  EXPECT_EQ(s.deployment.wait_s, 30);
  EXPECT_EQ(s.deployment.timeout_s, 900);
  s.deployment.phase = DeploymentPhase::kRollingBack;
  EXPECT_EQ(s.deployment.BatchSize(8), 3);  // RollbackMaximumBatchSize, not MaximumBatchSize
}

// The two batch sizes mean different things and get different values: a rollout places
// MaximumBatchSize copies at a time, a rollback RollbackMaximumBatchSize, and a rollback
// without one puts every copy back at once.
TEST(DeploymentTest, ARollbackPlacesItsOwnBatchSize) {
  json policy = {{"MaximumBatchSize", {{"Type", "COPY_COUNT"}, {"Value", 1}}},
                 {"WaitIntervalInSeconds", 0},
                 {"RollbackMaximumBatchSize", {{"Type", "CAPACITY_PERCENT"}, {"Value", 50}}}};
  Deployment d = StartDeployment({{"RollingUpdatePolicy", policy}}, CopySpec{}, kT0).deployment;
  EXPECT_EQ(NextDeploymentStep(d, {6, 0, 0, 6}, "", kT0).place, 1);
  d.phase = DeploymentPhase::kRollingBack;
  d.reason = "copy 7 on node-a could not start";
  // Rolling back, the "new" copies are the previous specification's: none yet, 6 failed ones.
  DeploymentStep step = NextDeploymentStep(d, {6, 0, 0, 6}, "", kT0);
  EXPECT_EQ(step.place, 3);  // 50 % of 6
  EXPECT_NE(step.progress.find("batches of 3"), std::string::npos) << step.progress;
  policy.erase("RollbackMaximumBatchSize");
  d = StartDeployment({{"RollingUpdatePolicy", policy}}, CopySpec{}, kT0).deployment;
  d.phase = DeploymentPhase::kRollingBack;
  EXPECT_EQ(NextDeploymentStep(d, {6, 0, 0, 6}, "", kT0).place, 6);
}

TEST(DeploymentTest, ABatchIsPlacedBesideTheOldCopiesWhichStopOnlyOnceItServes) {
  Deployment d = Rolling(2, 0);
  DeploymentStep step = NextDeploymentStep(d, {5, 0, 0, 5}, "", kT0);
  EXPECT_EQ(step.kind, Kind::kContinue);
  EXPECT_EQ(step.place, 2);
  EXPECT_EQ(step.stop, 0);
  d.batch_open = true;
  // One of the two new copies serves: nothing stops, nothing more is placed.
  step = NextDeploymentStep(d, {5, 2, 1, 5}, "", kT0 + 1000);
  EXPECT_EQ(step.place, 0);
  EXPECT_EQ(step.stop, 0);
  EXPECT_FALSE(step.start_bake);
  EXPECT_NE(step.progress.find("waiting for 1 new copy to pass the health check"),
            std::string::npos)
      << step.progress;
  // Both serve: two old copies stop, and the baking period starts.
  step = NextDeploymentStep(d, {5, 2, 2, 5}, "", kT0 + 2000);
  EXPECT_EQ(step.stop, 2);
  EXPECT_EQ(step.place, 0);
  EXPECT_TRUE(step.start_bake);
}

TEST(DeploymentTest, TheNextBatchWaitsForTheWaitInterval) {
  Deployment d = Rolling(2, 10);
  d.baked_ms = kT0;  // Two old copies stopped at kT0.
  DeploymentStep step = NextDeploymentStep(d, {5, 2, 2, 3}, "", kT0 + 9'999);
  EXPECT_EQ(step.place, 0);
  EXPECT_NE(step.progress.find("next batch after the 10 s wait interval"), std::string::npos)
      << step.progress;
  step = NextDeploymentStep(d, {5, 2, 2, 3}, "", kT0 + 10'000);
  EXPECT_EQ(step.place, 2);
  EXPECT_TRUE(step.new_batch);
  // The last batch is what is left, not a whole batch.
  step = NextDeploymentStep(d, {5, 4, 4, 1}, "", kT0 + 10'000);
  EXPECT_EQ(step.place, 1);
}

TEST(DeploymentTest, ItIsDoneOnlyWhenNoOldCopyIsLeftAndTheLastBakeIsOver) {
  Deployment d = Rolling(1, 5);
  d.baked_ms = kT0;
  EXPECT_EQ(NextDeploymentStep(d, {3, 3, 3, 0}, "", kT0 + 4'000).kind, Kind::kContinue);
  EXPECT_EQ(NextDeploymentStep(d, {3, 3, 2, 0}, "", kT0 + 9'000).kind, Kind::kContinue);
  EXPECT_EQ(NextDeploymentStep(d, {3, 3, 3, 0}, "", kT0 + 5'000).kind, Kind::kDone);
  d.batch_open = true;  // The last batch just served: its bake starts now.
  EXPECT_EQ(NextDeploymentStep(d, {3, 3, 3, 0}, "", kT0 + 60'000).kind, Kind::kContinue);
}

TEST(DeploymentTest, CopiesLostFromTheCountComeBackOnTheNewSpecificationAtOnce) {
  Deployment d = Rolling(1, 30);
  d.baked_ms = kT0;
  // Baking, and an old copy's node stopped reporting: 1 new + 3 old of 5.
  DeploymentStep step = NextDeploymentStep(d, {5, 1, 1, 3}, "", kT0 + 1'000);
  EXPECT_EQ(step.place, 1);
  EXPECT_FALSE(step.new_batch);
}

TEST(DeploymentTest, AFewerDesiredCountStopsOldCopiesFirst) {
  Deployment d = Rolling(1, 0);
  DeploymentStep step = NextDeploymentStep(d, {2, 1, 1, 3}, "", kT0);
  EXPECT_EQ(step.stop, 2);
  EXPECT_EQ(step.place, 0);
}

TEST(DeploymentTest, ANewCopyThatCannotStartRollsBackWithItsReason) {
  Deployment d = Rolling(1, 0);
  DeploymentStep step =
      NextDeploymentStep(d, {3, 1, 0, 3}, "copy 3 on node-a could not start (failed)", kT0);
  EXPECT_EQ(step.kind, Kind::kRollBack);
  EXPECT_EQ(step.reason, "copy 3 on node-a could not start (failed)");
  // Rolling back, copies of the old specification that fail keep restarting.
  d.phase = DeploymentPhase::kRollingBack;
  d.reason = step.reason;
  step = NextDeploymentStep(d, {3, 3, 2, 1}, "copy 1 on node-b could not start", kT0);
  EXPECT_EQ(step.kind, Kind::kContinue);
  EXPECT_NE(step.progress.find("Rolling back (copy 3 on node-a could not start (failed))"),
            std::string::npos)
      << step.progress;
}

TEST(DeploymentTest, TheExecutionTimeoutRollsBack) {
  Deployment d = Rolling(1, 0, 600);
  EXPECT_EQ(NextDeploymentStep(d, {3, 1, 0, 3}, "", kT0 + 600'000).kind, Kind::kContinue);
  DeploymentStep step = NextDeploymentStep(d, {3, 1, 0, 3}, "", kT0 + 600'001);
  EXPECT_EQ(step.kind, Kind::kRollBack);
  EXPECT_NE(step.reason.find("MaximumExecutionTimeoutInSeconds of 600 s"), std::string::npos)
      << step.reason;
  d.phase = DeploymentPhase::kRollingBack;  // A rollback has no timeout.
  EXPECT_EQ(NextDeploymentStep(d, {3, 1, 0, 3}, "", kT0 + 6'000'000).kind, Kind::kContinue);
}

TEST(DeploymentTest, ItSurvivesItsRecord) {
  Deployment d = Rolling(2, 7, 900);
  d.from.version = 4;
  d.from.specification = {{"ModelName", "m"}};
  d.from.cpu_milli = 1500;
  d.phase = DeploymentPhase::kRollingBack;
  d.reason = "copy 0 on n could not start";
  d.baked_ms = kT0 + 5;
  d.rolled_back_ms = kT0 + 6;
  d.batch_open = true;
  auto back = Deployment::FromJson(json::parse(d.ToJson().dump()));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->ToJson(), d.ToJson());
  EXPECT_FALSE(Deployment::FromJson({{"Phase", "Sideways"}}).has_value());
}

}  // namespace
}  // namespace carve::server::sagemaker
