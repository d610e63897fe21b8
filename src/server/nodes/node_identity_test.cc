#include "server/nodes/node_identity.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "store/fake_store.h"

namespace carve::server::nodes {
namespace {

using namespace std::chrono_literals;

class NodeIdentityTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  store::FakeStore store_{clock_};
  NodeIdentity identity_{store_, clock_};

  std::string Token(std::chrono::seconds ttl = 3600s) {
    auto t = identity_.CreateBootstrapToken(ttl, "test");
    EXPECT_TRUE(t.has_value()) << t.error().message;
    return t->token;
  }
  std::string JoinAs(const std::string& node) {
    const std::string token = Token();
    auto id = identity_.VerifyBootstrapToken(token);
    EXPECT_TRUE(id.has_value());
    auto credential = identity_.Join(*id, node);
    EXPECT_TRUE(credential.has_value()) << credential.error().message;
    return *credential;
  }
};

TEST_F(NodeIdentityTest, ABootstrapTokenHasKubeadmsShapeAndVerifiesUntilItExpires) {
  auto t = identity_.CreateBootstrapToken(60s, "rack 4");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->token.size(), 23u);
  EXPECT_EQ(t->token[6], '.');
  EXPECT_EQ(t->token.substr(0, 6), t->id);
  EXPECT_EQ(identity_.VerifyBootstrapToken(t->token), t->id);
  clock_.Advance(59s);
  EXPECT_EQ(identity_.VerifyBootstrapToken(t->token), t->id);
  clock_.Advance(1s);
  EXPECT_EQ(identity_.VerifyBootstrapToken(t->token), std::nullopt);
  EXPECT_TRUE(identity_.ListBootstrapTokens()->empty());
}

TEST_F(NodeIdentityTest, ATokenWithAnotherSecretOrExtraBytesIsRefused) {
  const std::string token = Token();
  std::string wrong = token;
  wrong.back() = wrong.back() == 'a' ? 'b' : 'a';
  EXPECT_EQ(identity_.VerifyBootstrapToken(wrong), std::nullopt);
  EXPECT_EQ(identity_.VerifyBootstrapToken(token + "x"), std::nullopt);
  EXPECT_EQ(identity_.VerifyBootstrapToken(token.substr(0, 22)), std::nullopt);
  EXPECT_EQ(identity_.VerifyBootstrapToken(""), std::nullopt);
}

TEST_F(NodeIdentityTest, TheStoreKeepsDigestsNotSecrets) {
  const std::string token = Token();
  const std::string credential = JoinAs("node-a");
  for (std::string_view kind : {kBootstrapTokenKind, kNodeCredentialKind}) {
    // The Result is named: a range-for over `*temporary` reads a destroyed vector.
    const auto records = store_.ListAllAccounts(std::string(kind));
    ASSERT_TRUE(records.has_value());
    ASSERT_FALSE(records->empty()) << kind;
    for (const auto& r : *records) {
      EXPECT_EQ(r.body.find(token.substr(7)), std::string::npos) << r.body;
      EXPECT_EQ(r.body.find(ParseNodeCredential(credential)->secret), std::string::npos)
          << r.body;
    }
  }
}

TEST_F(NodeIdentityTest, ACredentialSpeaksForTheNodeItJoinedAsUntilRevoked) {
  const std::string credential = JoinAs("node-a");
  EXPECT_EQ(identity_.VerifyNode(credential), "node-a");
  std::string forged = credential;
  forged.back() = forged.back() == '0' ? '1' : '0';
  EXPECT_EQ(identity_.VerifyNode(forged), std::nullopt);
  ASSERT_TRUE(identity_.Revoke("node-a").ok());
  EXPECT_EQ(identity_.VerifyNode(credential), std::nullopt);
  EXPECT_EQ(identity_.Revoke("node-a").error().code, ErrorCode::kNotFound);
}

TEST_F(NodeIdentityTest, ANodeIdIsBoundToOneCredential) {
  const std::string first = JoinAs("node-a");
  const std::string token = Token();
  auto again = identity_.Join(*identity_.VerifyBootstrapToken(token), "node-a");
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, ErrorCode::kAlreadyExists);
  EXPECT_NE(again.error().message.find("carve node revoke node-a"), std::string::npos);
  EXPECT_EQ(identity_.VerifyNode(first), "node-a");
  // Once revoked, the node joins again and only the new credential speaks for it.
  ASSERT_TRUE(identity_.Revoke("node-a").ok());
  auto second = identity_.Join(*identity_.VerifyBootstrapToken(token), "node-a");
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(identity_.VerifyNode(*second), "node-a");
  EXPECT_EQ(identity_.VerifyNode(first), std::nullopt);
}

TEST_F(NodeIdentityTest, AJoinRefusesABadNodeIdAndADeletedToken) {
  const std::string token = Token();
  const std::string id = *identity_.VerifyBootstrapToken(token);
  auto bad = identity_.Join(id, "../../etc");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  ASSERT_TRUE(identity_.DeleteBootstrapToken(id).ok());
  EXPECT_EQ(identity_.VerifyBootstrapToken(token), std::nullopt);
  EXPECT_EQ(identity_.Join(id, "node-a").error().code, ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(identity_.ListNodeCredentials()->empty());
}

TEST_F(NodeIdentityTest, IssueReplacesTheEmbeddedNodesCredential) {
  auto first = identity_.Issue("local-0");
  auto second = identity_.Issue("local-0");
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(identity_.VerifyNode(*first), std::nullopt);
  EXPECT_EQ(identity_.VerifyNode(*second), "local-0");
  auto listed = identity_.ListNodeCredentials();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].joined_with, "embedded");
}

// Another replica's identity over the same store sees a revocation at its next verification.
TEST_F(NodeIdentityTest, AnotherInstanceOverTheSameStoreSeesWritesAtOnce) {
  NodeIdentity peer(store_, clock_);
  const std::string credential = JoinAs("node-a");
  EXPECT_EQ(peer.VerifyNode(credential), "node-a");
  ASSERT_TRUE(identity_.Revoke("node-a").ok());
  EXPECT_EQ(peer.VerifyNode(credential), std::nullopt);
}

TEST_F(NodeIdentityTest, TtlAndDescriptionAreBounded) {
  EXPECT_EQ(identity_.CreateBootstrapToken(0s, "").error().code, ErrorCode::kInvalidArgument);
  auto long_ttl = identity_.CreateBootstrapToken(NodeIdentity::kMaxTtl + 1s, "");
  ASSERT_FALSE(long_ttl.has_value());
  EXPECT_NE(long_ttl.error().message.find("ttl_seconds"), std::string::npos);
  EXPECT_FALSE(identity_.CreateBootstrapToken(60s, std::string(257, 'x')).has_value());
  EXPECT_FALSE(identity_.CreateBootstrapToken(60s, "a\nb").has_value());
}

}  // namespace
}  // namespace carve::server::nodes
