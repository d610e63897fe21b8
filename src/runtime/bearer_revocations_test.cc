#include "runtime/bearer_revocations.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "store/fake_store.h"

namespace carve::runtime {
namespace {

constexpr int64_t kNowSeconds = 1'796'151'600;  // 2026-12-01T19:00:00Z

aws::VerifiedBearer Token(const std::string& id, int64_t expires_at = kNowSeconds + 3600) {
  aws::VerifiedBearer t;
  t.caller = aws::VerifiedCaller{"AKIDEXAMPLE", "111111111111", "us-east-1"};
  t.endpoint = "ep";
  t.expires_at_unix_seconds = expires_at;
  t.id = id;
  return t;
}

class BearerRevocationsTest : public ::testing::Test {
 protected:
  FakeClock clock_{kNowSeconds * 1000};
  store::FakeStore store_{clock_};
};

TEST_F(BearerRevocationsTest, ARevokedTokenIsRevokedAndAnotherIsNot) {
  BearerRevocations r(store_, clock_);
  EXPECT_FALSE(r.IsRevoked("a"));
  ASSERT_TRUE(r.Revoke(Token("a")).ok());
  EXPECT_TRUE(r.IsRevoked("a"));
  EXPECT_FALSE(r.IsRevoked("b"));
  ASSERT_TRUE(r.Revoke(Token("a")).ok()) << "revoking twice is not an error";
  EXPECT_EQ(r.size(), 1u);
}

// Another replica (another instance on the same Store) sees a revocation at its next check,
// through the change feed; and a server that starts later reads it from the Store.
TEST_F(BearerRevocationsTest, ARevocationCountsEverywhereFromTheNextCheck) {
  BearerRevocations here(store_, clock_);
  BearerRevocations there(store_, clock_);
  EXPECT_FALSE(there.IsRevoked("a"));
  ASSERT_TRUE(here.Revoke(Token("a")).ok());
  EXPECT_TRUE(there.IsRevoked("a"));
  BearerRevocations restarted(store_, clock_);
  EXPECT_TRUE(restarted.IsRevoked("a"));
  ASSERT_TRUE(store_.Delete({"111111111111", std::string(kRevokedBearerTokenKind), "a"}).ok());
  EXPECT_FALSE(there.IsRevoked("a"));
}

// A check whose read of every revocation failed keeps what it knew and reads everything again at
// the next one. Such a read follows more changes than a watcher keeps (kMaxPendingChanges), so
// the changes that one read was to cover are not reported again.
TEST_F(BearerRevocationsTest, AFailedReadIsReadAgainWholeAtTheNextCheck) {
  BearerRevocations r(store_, clock_);
  EXPECT_FALSE(r.IsRevoked("t5"));  // The first, whole read.
  std::vector<store::Mutation> many;
  const std::string body =
      "{\"expires_ms\":" + std::to_string(kNowSeconds * 1000 + 3'600'000) + "}";
  for (size_t i = 0; i <= store::Store::kMaxPendingChanges; ++i) {
    many.push_back(
        store::Put{{"111111111111", std::string(kRevokedBearerTokenKind), "t" + std::to_string(i)},
                   body,
                   std::nullopt});
  }
  ASSERT_TRUE(store_.Commit(std::move(many)).has_value());
  store_.FailNthRead(1, Error{ErrorCode::kUnavailable, "etcd: no leader"});
  EXPECT_FALSE(r.IsRevoked("t5"));  // Too many changes: a whole read, which failed.
  EXPECT_TRUE(r.IsRevoked("t5"));   // Read again, whole.
}

// Nothing is revoked when the Store does not take the write, and the caller is told.
TEST_F(BearerRevocationsTest, AFailedWriteRevokesNothing) {
  BearerRevocations r(store_, clock_);
  store_.FailNthCommit(1, Error{ErrorCode::kUnavailable, "disk full"});
  Status s = r.Revoke(Token("a"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_FALSE(r.IsRevoked("a"));
  EXPECT_EQ(r.size(), 0u);
}

// A token refused as expired needs no record: the record goes at the next revocation.
TEST_F(BearerRevocationsTest, RecordsOfExpiredTokensAreDroppedAtTheNextRevocation) {
  BearerRevocations r(store_, clock_);
  ASSERT_TRUE(r.Revoke(Token("short", kNowSeconds + 60)).ok());
  ASSERT_TRUE(r.Revoke(Token("long", kNowSeconds + 7200)).ok());
  clock_.Advance(std::chrono::seconds(61));
  EXPECT_FALSE(r.IsRevoked("short"));  // Expired: refused as such, not as revoked.
  EXPECT_EQ(r.size(), 2u);
  ASSERT_TRUE(r.Revoke(Token("next")).ok());
  EXPECT_EQ(r.size(), 2u);
  EXPECT_TRUE(r.IsRevoked("long"));
  EXPECT_TRUE(r.IsRevoked("next"));
  auto left = store_.ListAllAccounts(std::string(kRevokedBearerTokenKind));
  ASSERT_TRUE(left.has_value());
  EXPECT_EQ(left->size(), 2u);
}

}  // namespace
}  // namespace carve::runtime
