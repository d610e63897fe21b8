#include "app/fleet_config.h"

#include <gtest/gtest.h>

namespace carve::app {
namespace {

TEST(FleetConfig, DefaultIsTwoP4dOneP5AndOneG5) {
  FleetConfig c = DefaultFleetConfig();
  ASSERT_EQ(c.nodes.size(), 4u);
  EXPECT_EQ(c.nodes[0], (NodeSpec{NodeId("p4d.24xlarge-0"), "ml.p4d.24xlarge"}));
  EXPECT_EQ(c.nodes[1], (NodeSpec{NodeId("p4d.24xlarge-1"), "ml.p4d.24xlarge"}));
  EXPECT_EQ(c.nodes[2], (NodeSpec{NodeId("p5.48xlarge-0"), "ml.p5.48xlarge"}));
  EXPECT_EQ(c.nodes[3], (NodeSpec{NodeId("g5.48xlarge-0"), "ml.g5.48xlarge"}));
  EXPECT_EQ(c.carve_time_per_gpu, std::chrono::milliseconds(2000));
}

TEST(FleetConfig, ADocumentWithoutAFleetSectionGivesTheDefault) {
  auto c = ParseFleetConfig("server:\n  listen: 127.0.0.1:1\n");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->nodes.size(), 4u);
}

TEST(FleetConfig, ParsesCountsNamesAndCarveTime) {
  auto c = ParseFleetConfig(R"(
fleet:
  carve_time_ms: 50
  nodes:
    - instance_type: ml.p5.48xlarge
      count: 2
    - instance_type: ml.p4d.24xlarge
      name: lab-a100
)");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->carve_time_per_gpu, std::chrono::milliseconds(50));
  ASSERT_EQ(c->nodes.size(), 3u);
  EXPECT_EQ(c->nodes[1].id, NodeId("p5.48xlarge-1"));
  EXPECT_EQ(c->nodes[2], (NodeSpec{NodeId("lab-a100"), "ml.p4d.24xlarge"}));
}

TEST(FleetConfig, RejectsANonPositiveCountNamingTheKey) {
  auto c =
      ParseFleetConfig("fleet:\n  nodes:\n    - instance_type: ml.p5.48xlarge\n      count: 0\n");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().message, "fleet.nodes[0].count: 0 must be >= 1");
}

// yaml-cpp decodes "\N" in a double-quoted scalar to the lone byte 85, which is not UTF-8.
TEST(FleetConfig, RejectsANameWhoseEscapeDecodesToAByteThatIsNotText) {
  auto c = ParseFleetConfig(
      "fleet:\n  nodes:\n    - instance_type: ml.p5.48xlarge\n      name: \"gpu\\N1\"\n");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(
      c.error().message.rfind("fleet.nodes[0].name: byte 3 of the value is not UTF-8 text", 0), 0u)
      << c.error().message;
}

TEST(FleetConfig, RejectsDuplicateNodeNames) {
  auto c = ParseFleetConfig(R"(
fleet:
  nodes:
    - {instance_type: ml.p5.48xlarge, name: a}
    - {instance_type: ml.p4d.24xlarge, name: a}
)");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("'a' is used twice"), std::string::npos);
}

TEST(FleetConfig, RejectsMalformedYaml) {
  auto c = ParseFleetConfig("fleet: [unclosed");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidArgument);
}

// Found by the fleet_yaml fuzz target (fuzz/corpus/fleet_yaml/timeout-count-of-millions): a count
// of millions made the parser build every node before anything said no.
TEST(FleetConfig, RefusesAFleetOfMoreNodesThanAConfigMayList) {
  auto c = ParseFleetConfig(
      "fleet:\n  nodes:\n    - instance_type: ml.p4d.24xlarge\n      count: 9999\n"
      "    - instance_type: ml.p5.48xlarge\n      count: 6999941\n");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().message,
            "fleet.nodes[1].count: 6999941 would make the fleet more than 10000 nodes, the most a "
            "config lists (each runs an agent in the server); simulate more with carve fleet-sim");
  auto at_cap = ParseFleetConfig(
      "fleet:\n  nodes:\n    - instance_type: ml.p4d.24xlarge\n      count: 10000\n");
  ASSERT_TRUE(at_cap.has_value()) << at_cap.error().message;
  EXPECT_EQ(at_cap->nodes.size(), 10000u);
}

}  // namespace
}  // namespace carve::app
