#include "runtime/copy_balancer.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace carve::runtime {
namespace {

constexpr char kAccount[] = "111111111111";
const std::vector<CopyTarget> kCopies = {
    {"a", "127.0.0.1:1"}, {"b", "127.0.0.1:2"}, {"c", "127.0.0.1:3"}};

TEST(CopyBalancer, LeastOutstandingPicksTheIdlestCopy) {
  FakeClock clock;
  CopyBalancer bal(clock, std::chrono::seconds(5), nullptr, 7);
  auto a = bal.Acquire(kAccount, "ic", Strategy::kLeastOutstandingRequests, kCopies, {});
  auto b = bal.Acquire(kAccount, "ic", Strategy::kLeastOutstandingRequests, kCopies, {});
  auto c = bal.Acquire(kAccount, "ic", Strategy::kLeastOutstandingRequests, kCopies, {});
  ASSERT_TRUE(a && b && c);
  std::set<std::string> ids{a->copy().id, b->copy().id, c->copy().id};
  EXPECT_EQ(ids.size(), 3u);  // One each before any copy gets a second.
}

TEST(CopyBalancer, LeasesReleaseTheirCountOnDestruction) {
  FakeClock clock;
  CopyBalancer bal(clock, std::chrono::seconds(5), nullptr, 7);
  {
    auto lease = bal.Acquire(kAccount, "ic", Strategy::kLeastOutstandingRequests, {kCopies[0]}, {});
    ASSERT_TRUE(lease);
    EXPECT_EQ(bal.Outstanding("a"), 1);
    auto moved = std::move(*lease);
    EXPECT_EQ(bal.Outstanding("a"), 1);
  }
  EXPECT_EQ(bal.Outstanding("a"), 0);
}

TEST(CopyBalancer, TiesAreBrokenAtRandom) {
  FakeClock clock;
  CopyBalancer bal(clock, std::chrono::seconds(5), nullptr, 7);
  std::map<std::string, int> first;
  for (int i = 0; i < 300; ++i) {
    auto lease = bal.Acquire(kAccount, "ic", Strategy::kLeastOutstandingRequests, kCopies, {});
    ++first[lease->copy().id];
  }
  EXPECT_EQ(first.size(), 3u);
  for (const auto& [id, n] : first) EXPECT_GT(n, 50) << id;
}

// A seed (RouterOptions::seed, what tests and benchmarks pass) makes the choices repeat: two
// balancers seeded alike pick the same copies in the same order.
TEST(CopyBalancer, TheSameSeedRepeatsTheSameChoices) {
  FakeClock clock;
  auto picks = [&](uint64_t seed) {
    CopyBalancer bal(clock, std::chrono::seconds(5), nullptr, seed);
    std::string out;
    for (int i = 0; i < 64; ++i) {
      out += bal.Acquire(kAccount, "ic", Strategy::kRandom, kCopies, {})->copy().id;
    }
    return out;
  };
  EXPECT_EQ(picks(7), picks(7));
  EXPECT_NE(picks(7), picks(8));  // 3^64 sequences: the seed is what decides them
}

TEST(CopyBalancer, RandomIgnoresOutstandingCounts) {
  FakeClock clock;
  CopyBalancer bal(clock, std::chrono::seconds(5), nullptr, 7);
  std::vector<CopyBalancer::Lease> held;
  for (int i = 0; i < 200; ++i) {
    held.push_back(*bal.Acquire(kAccount, "ic", Strategy::kRandom, kCopies, {}));
  }
  // Least-outstanding would keep them within one of each other; random drifts.
  int64_t spread = std::max({bal.Outstanding("a"), bal.Outstanding("b"), bal.Outstanding("c")}) -
                   std::min({bal.Outstanding("a"), bal.Outstanding("b"), bal.Outstanding("c")});
  EXPECT_GT(spread, 1);
  EXPECT_EQ(bal.Outstanding("a") + bal.Outstanding("b") + bal.Outstanding("c"), 200);
}

TEST(CopyBalancer, QuarantinedCopiesAreSkippedWhileOthersRemain) {
  FakeClock clock;
  CopyBalancer bal(clock, std::chrono::seconds(5), nullptr, 7);
  bal.Quarantine("a");
  for (int i = 0; i < 20; ++i) {
    auto lease = bal.Acquire(kAccount, "ic", Strategy::kRandom, kCopies, {"b"});
    ASSERT_TRUE(lease);
    EXPECT_EQ(lease->copy().id, "c");
  }
  clock.Advance(std::chrono::seconds(5));
  EXPECT_FALSE(bal.IsQuarantined("a"));
}

TEST(CopyBalancer, AQuarantinedCopyIsStillTriedWhenNoOtherIsLeft) {
  FakeClock clock;
  CopyBalancer bal(clock, std::chrono::seconds(5), nullptr, 7);
  bal.Quarantine("a");
  auto lease = bal.Acquire(kAccount, "ic", Strategy::kRandom, kCopies, {"b", "c"});
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->copy().id, "a");
  EXPECT_FALSE(
      bal.Acquire(kAccount, "ic", Strategy::kRandom, kCopies, {"a", "b", "c"}).has_value());
}

TEST(CopyBalancer, InFlightGaugeFollowsLeases) {
  FakeClock clock;
  http::MetricsRegistry metrics;
  http::Gauge& g = metrics.AddGauge("g", "h", {"account", "component", "copy"});
  CopyBalancer bal(clock, std::chrono::seconds(5), &g, 7);
  {
    auto lease = bal.Acquire(kAccount, "ic", Strategy::kRandom, {kCopies[1]}, {});
    EXPECT_EQ(g.Value({kAccount, "ic", "b"}), 1);
  }
  EXPECT_EQ(g.Value({kAccount, "ic", "b"}), 0);
}

}  // namespace
}  // namespace carve::runtime
