#include "core/score_buckets.h"

#include <gtest/gtest.h>

#include <vector>

namespace carve::core {
namespace {

std::vector<uint32_t> Order(const ScoreBuckets& b, int min_score, bool ascending) {
  std::vector<uint32_t> seen;
  b.Find(min_score, ascending, [&](uint32_t n) {
    seen.push_back(n);
    return false;
  });
  return seen;
}

TEST(ScoreBuckets, VisitsLowestScoresFirstWhenAscendingAndHighestFirstOtherwise) {
  ScoreBuckets b(4);
  b.Set(0, 3);
  b.Set(1, 100);
  b.Set(2, 1);
  b.Set(3, 64);
  EXPECT_EQ(Order(b, 1, true), (std::vector<uint32_t>{2, 0, 3, 1}));
  EXPECT_EQ(Order(b, 1, false), (std::vector<uint32_t>{1, 3, 0, 2}));
  EXPECT_EQ(Order(b, 4, true), (std::vector<uint32_t>{3, 1}));
  EXPECT_EQ(Order(b, 65, false), (std::vector<uint32_t>{1}));
}

TEST(ScoreBuckets, StopsAtTheFirstAcceptedNode) {
  ScoreBuckets b(3);
  b.Set(0, 5);
  b.Set(1, 6);
  b.Set(2, 7);
  EXPECT_EQ(b.Find(1, true, [](uint32_t n) { return n != 0; }), 1u);
  EXPECT_EQ(b.Find(1, true, [](uint32_t) { return false; }), ScoreBuckets::kNone);
}

TEST(ScoreBuckets, ScoreZeroUnlistsANodeAndMovesKeepOthersListed) {
  ScoreBuckets b(3);
  b.Set(0, 2);
  b.Set(1, 2);
  b.Set(2, 2);
  b.Set(1, 0);
  EXPECT_EQ(Order(b, 1, true).size(), 2u);
  b.Set(0, 9);
  b.Set(2, 63);
  b.Set(2, 64);
  EXPECT_EQ(Order(b, 1, true), (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(b.score(1), 0);
}

TEST(ScoreBuckets, ClampsScoresToTheTopBucket) {
  ScoreBuckets b(2);
  b.Set(0, 500);
  b.Set(1, -3);
  EXPECT_EQ(b.score(0), ScoreBuckets::kMaxScore);
  EXPECT_EQ(b.score(1), 0);
  EXPECT_EQ(Order(b, ScoreBuckets::kMaxScore, true), (std::vector<uint32_t>{0}));
  EXPECT_TRUE(Order(b, ScoreBuckets::kMaxScore + 1, true).empty());
}

}  // namespace
}  // namespace carve::core
