#include "core/mgpu_params.h"

#include <gtest/gtest.h>

namespace carve::core {
namespace {

std::string MessageOf(std::string_view text) {
  auto r = CheckMgpuParams(text);
  EXPECT_FALSE(r.has_value()) << "accepted: " << text;
  return r.has_value() ? std::string() : r.error().message;
}

// The CustomJob example of the seed, comments and all.
TEST(CheckMgpuParams, ResolvesTheSeedCustomJobExample) {
  auto r = CheckMgpuParams(
      "-- Set mgu-related parameters\n"
      "emr.serverless.mgpu.core=30;\n"
      "emr.serverless.mgpu.memory=1000;\n"
      "\n"
      "-- Set historical GPU parameters.\n"
      "-- Equivalent to emr.serverless.mgpu.core=100\n"
      "serverless.custom.job.task.gpus=1; \n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_TRUE(r->custom_task.has_value());
  EXPECT_EQ(r->custom_task->core_percent, 30);
  EXPECT_EQ(r->custom_task->memory_mib, 1000);
  EXPECT_FALSE(r->ray_worker.has_value());
  EXPECT_FALSE(r->ray_head.has_value());
  EXPECT_TRUE(r->warnings.empty());
}

TEST(CheckMgpuParams, ResolvesTheSeedRayJobExample) {
  auto r = CheckMgpuParams(
      "-- mgpu-related parameters\n"
      "serverless.ray.worker.mgpu.core=30;\n"
      "serverless.ray.worker.mgpu.memory=4096;\n"
      "serverless.ray.worker.gpu.amount=1;\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_TRUE(r->ray_worker.has_value());
  EXPECT_EQ(*r->ray_worker, (MgpuShare{30, 4096}));
  EXPECT_FALSE(r->custom_task.has_value());
}

TEST(CheckMgpuParams, ResolvesTheRayHeadKeys) {
  auto r =
      CheckMgpuParams("serverless.ray.head.mgpu.core=20; serverless.ray.head.mgpu.memory=512;");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->ForRole(MgpuRole::kRayHead), (MgpuShare{20, 512}));
}

// Legacy rule: serverless.custom.job.task.gpus=N means core = N*100.
TEST(CheckMgpuParams, ReadsLegacyTaskGpusAsNTimesOneHundredCore) {
  auto r = CheckMgpuParams("serverless.custom.job.task.gpus=2;");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->custom_task, (MgpuShare{200, std::nullopt}));
}

TEST(CheckMgpuParams, ReadsLegacyRayWorkerGpuAmountAsNTimesOneHundredCore) {
  auto r = CheckMgpuParams("serverless.ray.worker.gpu.amount=1;");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->ray_worker, (MgpuShare{100, std::nullopt}));
}

TEST(CheckMgpuParams, RejectsANegativeLegacyCardCount) {
  EXPECT_NE(MessageOf("serverless.ray.worker.gpu.amount=-1;")
                .find("serverless.ray.worker.gpu.amount=-1: the number of GPU cards"),
            std::string::npos);
}

TEST(CheckMgpuParams, LeavesARoleWithoutGpuWhenLegacyCountIsZero) {
  auto r = CheckMgpuParams("serverless.custom.job.task.gpus=0;");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_FALSE(r->custom_task.has_value());
}

TEST(CheckMgpuParams, RejectsALegacyCardCountThatContradictsTheCore) {
  EXPECT_EQ(MessageOf("emr.serverless.mgpu.core=30; serverless.custom.job.task.gpus=2;"),
            "serverless.custom.job.task.gpus=2 conflicts with emr.serverless.mgpu.core=30: that "
            "share uses 1 card");
}

// Rule messages carry the parameter the user wrote.
TEST(CheckMgpuParams, RejectsCore150WithTheSeedRuleMessage) {
  EXPECT_EQ(MessageOf("emr.serverless.mgpu.core=150;"),
            "emr.serverless.mgpu.core=150: above 100 only whole multiples of 100 are allowed "
            "(200 = two full cards)");
}

TEST(CheckMgpuParams, RejectsCoreBelowFiveForRayWorkers) {
  EXPECT_NE(MessageOf("serverless.ray.worker.mgpu.core=4;")
                .find("serverless.ray.worker.mgpu.core=4: core must be at least 5"),
            std::string::npos);
}

TEST(CheckMgpuParams, RejectsMemoryBelow256ForTheRayHead) {
  EXPECT_NE(MessageOf("serverless.ray.head.mgpu.core=10; serverless.ray.head.mgpu.memory=100;")
                .find("serverless.ray.head.mgpu.memory=100: memory must be at least 256 MiB"),
            std::string::npos);
}

TEST(CheckMgpuParams, RejectsMemoryWithCoreTwoHundred) {
  EXPECT_NE(MessageOf("emr.serverless.mgpu.core=200;\nemr.serverless.mgpu.memory=1000;")
                .find("emr.serverless.mgpu.memory=1000: memory cannot be set when core is 100"),
            std::string::npos);
}

TEST(CheckMgpuParams, RejectsMemoryWithoutCoreBecauseTheDefaultIsAFullCard) {
  EXPECT_NE(MessageOf("emr.serverless.mgpu.memory=1000;")
                .find("emr.serverless.mgpu.core is not set, so the share is 1 full card"),
            std::string::npos);
}

TEST(CheckMgpuParams, RejectsANonIntegerCore) {
  EXPECT_EQ(MessageOf("emr.serverless.mgpu.core=30.5;"),
            "emr.serverless.mgpu.core=30.5: must be a whole number of percent (no units or "
            "decimals)");
  EXPECT_NE(MessageOf("emr.serverless.mgpu.memory=1GiB; emr.serverless.mgpu.core=30;")
                .find("memory=1GiB: must be a whole number of MiB"),
            std::string::npos);
}

TEST(ParseMgpuParams, AcceptsWhitespaceAroundEqualsAndSeveralStatementsPerLine) {
  auto r = CheckMgpuParams("  emr.serverless.mgpu.core \t=  40 ;emr.serverless.mgpu.memory= 2048;");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->custom_task, (MgpuShare{40, 2048}));
}

TEST(ParseMgpuParams, KeepsUnknownKeysAndWarnsAboutThem) {
  auto r = CheckMgpuParams("spark.executor.memory = 4g;\nemr.serverless.mgpu.core=50;\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->passthrough.size(), 1u);
  EXPECT_EQ(r->passthrough[0].key, "spark.executor.memory");
  EXPECT_EQ(r->passthrough[0].value, "4g");
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("line 1: unknown parameter spark.executor.memory"),
            std::string::npos);
}

// A typo of an mGPU key would pass through to the engine and leave the task a whole card: it is
// refused, naming the nearest known key. Keys that are no mGPU setting still pass through.
TEST(ParseMgpuParams, RefusesAnUnknownMgpuKeyNamingTheNearestKnownOne) {
  for (const auto& [text, nearest] : std::vector<std::pair<std::string, std::string>>{
           {"emr.serverless.mgpu.cores=30;", "emr.serverless.mgpu.core"},
           {"emr.serverless.mgpu.mem=1000;", "emr.serverless.mgpu.memory"},
           {"serverless.ray.worker.mgpu.memroy=4096;", "serverless.ray.worker.mgpu.memory"},
           {"serverless.custom.job.task.gpu=1;", "serverless.custom.job.task.gpus"},
           {"EMR.Serverless.MGPU.Core=30;", "emr.serverless.mgpu.core"}}) {
    auto r = ParseMgpuParams("-- a typo\n" + text);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    const std::string key = text.substr(0, text.find('='));
    EXPECT_NE(r.error().message.find("line 2, column 1: " + key +
                                     " is not an mGPU parameter; did you mean " + nearest + "?"),
              std::string::npos)
        << r.error().message;
  }
  auto engine = ParseMgpuParams("spark.executor.memory=4g;\nserverless.ray.worker.num=3;");
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  EXPECT_EQ(engine->warnings.size(), 2u);
  // A key far too long to be a typo of one is not measured (and passes through).
  EXPECT_TRUE(ParseMgpuParams(std::string(100000, 'x') + "=1;").has_value());
}

TEST(ParseMgpuParams, WarnsWhenAKeyIsSetTwiceAndTheLastValueApplies) {
  auto r = CheckMgpuParams("emr.serverless.mgpu.core=30;\nemr.serverless.mgpu.core=60;\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->custom_task->core_percent, 60);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("set again (first on line 1)"), std::string::npos);
}

TEST(ParseMgpuParams, ReportsAMissingSemicolonWithLineAndColumn) {
  auto r = ParseMgpuParams("-- header\nemr.serverless.mgpu.core=30\nx=1;");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message,
            "line 2, column 28: expected ';' to end the statement 'emr.serverless.mgpu.core=30'");
}

TEST(ParseMgpuParams, ReportsAMissingEqualsWithLineAndColumn) {
  auto r = ParseMgpuParams("\n\n   emr.serverless.mgpu.core 30;");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message,
            "line 3, column 29: expected '=' after the parameter name 'emr.serverless.mgpu.core'");
}

TEST(ParseMgpuParams, ReportsAMissingValueAndAMissingName) {
  auto no_value = ParseMgpuParams("emr.serverless.mgpu.core = ;");
  ASSERT_FALSE(no_value.has_value());
  EXPECT_EQ(no_value.error().message,
            "line 1, column 28: expected a value after 'emr.serverless.mgpu.core='");
  auto no_name = ParseMgpuParams("a=1;\n  =5;");
  ASSERT_FALSE(no_name.has_value());
  EXPECT_EQ(no_name.error().message, "line 2, column 3: expected a parameter name, found '='");
}

TEST(ParseMgpuParams, AcceptsEmptyTextAndCommentOnlyText) {
  auto r = CheckMgpuParams("\n-- nothing here\n   \n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_FALSE(r->custom_task.has_value());
  EXPECT_TRUE(r->warnings.empty());
}

TEST(ParseMgpuParams, AcceptsATrailingCommentAfterAStatement) {
  auto r = CheckMgpuParams("emr.serverless.mgpu.core=25; -- a quarter card\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->custom_task->core_percent, 25);
}

}  // namespace
}  // namespace carve::core
