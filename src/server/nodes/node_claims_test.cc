#include "server/nodes/node_claims.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace carve::server::nodes {
namespace {

using ::testing::HasSubstr;

const Owner kEndpoint = Owner::Endpoint("111111111111", "ep", "AllTraffic");
const Owner kQueue = Owner::Queue("111111111111", "q");

class NodeClaimsTest : public ::testing::Test {
 protected:
  NodeClaimsTest() {
    EXPECT_TRUE(claims_.Upsert(NodeId("p4d-0"), "ml.p4d.24xlarge", true).ok());
    EXPECT_TRUE(claims_.Upsert(NodeId("p4d-1"), "ml.p4d.24xlarge", true).ok());
    EXPECT_TRUE(claims_.Upsert(NodeId("g5-0"), "ml.g5.12xlarge", true).ok());
  }
  NodeClaims claims_;
};

TEST_F(NodeClaimsTest, AClaimTakesFreeReadyNodesOfTheTypeInNameOrder) {
  auto ids = claims_.Claim(kEndpoint, "ml.p4d.24xlarge", 1);
  ASSERT_TRUE(ids.has_value()) << ids.error().message;
  EXPECT_EQ(*ids, std::vector<NodeId>{NodeId("p4d-0")});
  EXPECT_EQ(claims_.Find(NodeId("p4d-0"))->owner, kEndpoint);
  EXPECT_FALSE(claims_.Find(NodeId("p4d-1"))->owner.has_value());
}

TEST_F(NodeClaimsTest, AnEndpointAndAQueueNeverShareANode) {
  ASSERT_TRUE(claims_.Claim(kEndpoint, "ml.p4d.24xlarge", 2).has_value());
  auto r = claims_.Claim(kQueue, "ml.p4d.24xlarge", 1);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
  EXPECT_THAT(r.error().message, HasSubstr("Queue q needs 1 x ml.p4d.24xlarge instance; the fleet "
                                           "has 2, 0 free. Missing: 1 x ml.p4d.24xlarge."));
  Status st = claims_.ClaimSpecific(kQueue, std::vector<NodeId>{NodeId("p4d-0")});
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(st.error().message, HasSubstr("held by variant AllTraffic of endpoint ep"));
}

TEST_F(NodeClaimsTest, TooFewNodesIsAllOrNothing) {
  auto r = claims_.Claim(kEndpoint, "ml.p4d.24xlarge", 3);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("Variant AllTraffic needs 3 x ml.p4d.24xlarge "
                                           "instances; the fleet has 2, 2 free. Missing: 1 x "));
  EXPECT_TRUE(claims_.NodesOf(kEndpoint).empty());
}

TEST_F(NodeClaimsTest, EnoughNodesOfWhichSomeAreNotReadyIsUnavailable) {
  ASSERT_TRUE(claims_.Upsert(NodeId("p4d-1"), "ml.p4d.24xlarge", false).ok());
  auto r = claims_.Claim(kEndpoint, "ml.p4d.24xlarge", 2);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("1 free instance is NotReady"));
  EXPECT_TRUE(claims_.NodesOf(kEndpoint).empty());
}

TEST_F(NodeClaimsTest, ReleaseFreesEveryNodeOfTheOwnerAndOnlyThose) {
  ASSERT_TRUE(claims_.Claim(kEndpoint, "ml.p4d.24xlarge", 2).has_value());
  ASSERT_TRUE(claims_.Claim(kQueue, "ml.g5.12xlarge", 1).has_value());
  claims_.Release(kEndpoint);
  EXPECT_TRUE(claims_.NodesOf(kEndpoint).empty());
  EXPECT_EQ(claims_.NodesOf(kQueue).size(), 1u);
}

TEST_F(NodeClaimsTest, ClaimSpecificIsAllOrNothingAndNamesAMissingNode) {
  Status st = claims_.ClaimSpecific(kEndpoint, std::vector<NodeId>{NodeId("p4d-0"), NodeId("x")});
  EXPECT_EQ(st.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(st.error().message, HasSubstr("node 'x' is no longer in the fleet"));
  EXPECT_FALSE(claims_.Find(NodeId("p4d-0"))->owner.has_value());
}

TEST_F(NodeClaimsTest, ARefusalNamesTheHolderOnlyToItsOwnAccount) {
  ASSERT_TRUE(claims_.ClaimSpecific(kEndpoint, std::vector<NodeId>{NodeId("p4d-0")}).ok());
  Status own = claims_.ClaimSpecific(kQueue, std::vector<NodeId>{NodeId("p4d-0")});
  ASSERT_FALSE(own.ok());
  EXPECT_THAT(own.error().message,
              HasSubstr("node 'p4d-0' is held by variant AllTraffic of endpoint ep"));
  Status other = claims_.ClaimSpecific(Owner::Queue("222222222222", "q"),
                                       std::vector<NodeId>{NodeId("p4d-0")});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().message, "node 'p4d-0' is held by another account");
}

TEST_F(NodeClaimsTest, UpsertRefusesAnUnknownTypeAndATypeChange) {
  EXPECT_EQ(claims_.Upsert(NodeId("z"), "ml.nope", true).error().code, ErrorCode::kInvalidArgument);
  Status st = claims_.Upsert(NodeId("p4d-0"), "ml.g5.12xlarge", true);
  EXPECT_THAT(st.error().message, HasSubstr("is a ml.p4d.24xlarge; it cannot become"));
}

TEST_F(NodeClaimsTest, EveryChangeBumpsTheGenerationAndANoOpDoesNot) {
  const uint64_t g0 = claims_.generation();
  ASSERT_TRUE(claims_.Upsert(NodeId("p4d-0"), "ml.p4d.24xlarge", true).ok());
  EXPECT_EQ(claims_.generation(), g0);
  ASSERT_TRUE(claims_.Upsert(NodeId("p4d-0"), "ml.p4d.24xlarge", false).ok());
  EXPECT_GT(claims_.generation(), g0);
  const uint64_t g1 = claims_.generation();
  ASSERT_TRUE(claims_.Claim(kQueue, "ml.g5.12xlarge", 1).has_value());
  EXPECT_GT(claims_.generation(), g1);
}

}  // namespace
}  // namespace carve::server::nodes
