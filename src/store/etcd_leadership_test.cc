// EtcdLeadership on a real etcd member: one replica leads, a standby takes over when the leader
// goes, and a deposed leader's writes are refused by the fence even before it notices.
#include "store/etcd_leadership.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "store/store_test_env.h"

namespace carve::store {
namespace {

using namespace std::chrono_literals;

struct Replica {
  explicit Replica(const std::string& prefix, const std::string& name)
      : store(OpenEtcdStore(SharedEtcd().endpoints(), nullptr, prefix)),
        leadership(std::make_unique<EtcdLeadership>(
            *store, LeadershipOptions{.identity = name, .details = "{\"n\":1}", .ttl = 2s})) {}
  std::unique_ptr<EtcdStore> store;
  std::unique_ptr<EtcdLeadership> leadership;
};

TEST(EtcdLeadership, OneReplicaLeadsAndAStandbyTakesOverWhenItStops) {
  const std::string prefix = UniqueEtcdPrefix();
  Replica a(prefix, "http://a:1"), b(prefix, "http://b:1");
  ASSERT_TRUE(a.leadership->Campaign([] { return true; }, [] {}).ok());
  EXPECT_TRUE(a.leadership->leading());
  std::atomic<bool> b_won{false};
  auto standby = std::async(std::launch::async, [&] {
    Status s = b.leadership->Campaign([] { return true; }, [] {});
    b_won = s.ok();
  });
  std::this_thread::sleep_for(500ms);
  EXPECT_FALSE(b_won.load());  // a still leads.
  EXPECT_EQ(b.leadership->Leader().value_or("?"), "http://a:1");
  auto replicas = b.leadership->Replicas();
  ASSERT_TRUE(replicas.has_value());
  ASSERT_EQ(replicas->size(), 2u);
  EXPECT_EQ(replicas->front().identity, "http://a:1");
  EXPECT_EQ(replicas->front().details, "{\"n\":1}");
  // a stops: it revokes its lease, so b need not wait out the TTL.
  const auto stopped = std::chrono::steady_clock::now();
  a.leadership.reset();
  ASSERT_EQ(standby.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(b_won.load());
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, 1s);
  EXPECT_EQ(b.leadership->Leader().value_or("?"), "http://b:1");
  // b's writes go through its fence.
  EXPECT_TRUE(b.store->Create(K("Model", "by-b"), "{}").has_value());
}

// A leader whose lease expires while it is paused (here the lease is revoked behind its back,
// which is what expiry does) is deposed at once: its next write is refused by the fence,
// another replica leads, and its keep-alive then tells it that it lost.
TEST(EtcdLeadership, ADeposedLeadersWritesAreRefusedAndItIsToldItLost) {
  const std::string prefix = UniqueEtcdPrefix();
  Replica a(prefix, "http://a:1"), b(prefix, "http://b:1");
  std::promise<void> lost;
  ASSERT_TRUE(a.leadership->Campaign([] { return true; }, [&] { lost.set_value(); }).ok());
  ASSERT_TRUE(a.store->Create(K("Model", "before"), "{}").has_value());
  ASSERT_TRUE(a.store->client().LeaseRevoke(a.leadership->lease()).ok());

  auto refused = a.store->Create(K("Model", "after"), "{}");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("no longer the leader"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(a.store->fenced(), 1);

  ASSERT_TRUE(b.leadership->Campaign([] { return true; }, [] {}).ok());
  auto still = a.store->Update(K("Model", "before"), "{\"x\":1}", 1);
  ASSERT_FALSE(still.has_value());
  EXPECT_NE(still.error().message.find("held by another replica"), std::string::npos);
  EXPECT_EQ(lost.get_future().wait_for(3s), std::future_status::ready);
  EXPECT_FALSE(a.leadership->leading());
  EXPECT_EQ(a.store->Get(K("Model", "after")).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(b.store->Get(K("Model", "before"))->version, 1);  // The refused update wrote nothing.
}

TEST(EtcdLeadership, ACampaignEndsWhenTheReplicaStopsTrying) {
  const std::string prefix = UniqueEtcdPrefix();
  Replica a(prefix, "http://a:1"), b(prefix, "http://b:1");
  ASSERT_TRUE(a.leadership->Campaign([] { return true; }, [] {}).ok());
  int rounds = 0;
  Status s = b.leadership->Campaign([&] { return ++rounds < 3; }, [] {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_FALSE(b.leadership->leading());
}

}  // namespace
}  // namespace carve::store
