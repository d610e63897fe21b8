#include "agent/nvml/fake_node_config.h"

#include <gtest/gtest.h>

namespace carve::agent {
namespace {

TEST(FakeNodeConfig, ParsesAnEightGpuA100Node) {
  auto c = ParseFakeNodeConfig("gpus: 8 x a100-40gb, driver 550.54.15, mig: enabled");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  ASSERT_EQ(c->gpus.size(), 8u);
  EXPECT_EQ(c->gpus[0]->id, "a100-40gb");
  EXPECT_EQ(c->driver_version, "550.54.15");
  EXPECT_EQ(c->mig, FakeMigState::kEnabled);
}

TEST(FakeNodeConfig, ParsesMultiLineTextWithComments) {
  auto c = ParseFakeNodeConfig(
      "# an H200 host\n"
      "gpus: h200-141gb\n"
      "mig: pending-enable\n"
      "fail-create: 2; lost: 0\n"
      "process: pid=4242 gpu=0 mib=512\n"
      "seed: 9\n");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  ASSERT_EQ(c->gpus.size(), 1u);
  EXPECT_EQ(c->gpus[0]->id, "h200-141gb");
  EXPECT_EQ(c->mig, FakeMigState::kPendingEnable);
  EXPECT_EQ(c->fail_nth_create, 2);
  EXPECT_EQ(c->lost_gpus, std::vector<uint32_t>{0});
  ASSERT_EQ(c->processes.size(), 1u);
  EXPECT_EQ(c->processes[0].pid, 4242u);
  EXPECT_EQ(c->processes[0].used_mib, 512u);
  EXPECT_EQ(c->seed, 9u);
}

TEST(FakeNodeConfig, RejectsAnUnknownGpuNamingTheClause) {
  auto c = ParseFakeNodeConfig("gpus: 2 x z9000");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(c.error().message.find("gpus: 2 x z9000"), std::string::npos) << c.error().message;
}

TEST(FakeNodeConfig, RejectsAnUnknownKeyListingTheKnownOnes) {
  auto c = ParseFakeNodeConfig("gpus: a100-40gb, colour: blue");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("unknown key 'colour'"), std::string::npos);
  EXPECT_NE(c.error().message.find("fail-create"), std::string::npos);
}

TEST(FakeNodeConfig, RejectsANodeWithoutGpus) {
  EXPECT_FALSE(ParseFakeNodeConfig("driver: 550.54.15").has_value());
}

TEST(FakeNodeConfig, RejectsALostGpuBeyondTheNode) {
  auto c = ParseFakeNodeConfig("gpus: 2 x a100-40gb, lost: 2");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("lost GPU 2"), std::string::npos);
}

TEST(FakeNodeConfig, RejectsABadDriverVersion) {
  auto c = ParseFakeNodeConfig("gpus: a100-40gb, driver: newest");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("driver: newest"), std::string::npos);
}

}  // namespace
}  // namespace carve::agent
