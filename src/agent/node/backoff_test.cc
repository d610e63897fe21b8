#include "agent/node/backoff.h"

#include <gtest/gtest.h>

namespace carve::agent::node {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, DoublesFromInitialWithJitterInTheUpperHalf) {
  Backoff b(milliseconds(500), milliseconds(10'000), 1);
  int64_t expected = 500;
  for (int i = 0; i < 5; ++i) {
    const milliseconds d = b.Next();
    EXPECT_GE(d.count(), expected / 2) << "attempt " << i;
    EXPECT_LE(d.count(), expected) << "attempt " << i;
    expected *= 2;
  }
}

TEST(Backoff, NeverWaitsLongerThanTheCap) {
  Backoff b(milliseconds(500), milliseconds(10'000), 2);
  for (int i = 0; i < 40; ++i) EXPECT_LE(b.Next().count(), 10'000);
  EXPECT_GE(b.Next().count(), 5'000);
}

TEST(Backoff, ResetStartsAgainFromInitial) {
  Backoff b(milliseconds(500), milliseconds(10'000), 3);
  for (int i = 0; i < 6; ++i) (void)b.Next();
  b.Reset();
  EXPECT_LE(b.Next().count(), 500);
  EXPECT_EQ(b.failures(), 1);
}

TEST(Backoff, SeedsVaryTheJitter) {
  Backoff a(milliseconds(1000), milliseconds(10'000), 1);
  Backoff b(milliseconds(1000), milliseconds(10'000), 99);
  bool differ = false;
  for (int i = 0; i < 8; ++i) differ = differ || a.Next() != b.Next();
  EXPECT_TRUE(differ);
}

}  // namespace
}  // namespace carve::agent::node
