// Placement of a job's tasks on a queue's cards: the per-card limits, gang and strategies.
#include "server/queues/queue_cards.h"

#include <gtest/gtest.h>

namespace carve::server::queues {
namespace {

// One A10G card (24576 MiB) per ml.g5.xlarge node; 512 MiB reserve leaves 24064 MiB to share.
QueueCards Cards(int nodes, std::string type = "ml.g5.xlarge", bool mgpu = true) {
  std::vector<QueueNode> list;
  for (int i = 0; i < nodes; ++i) list.push_back({"n" + std::to_string(i + 1), type});
  auto cards = QueueCards::Create(mgpu, list, 512);
  EXPECT_TRUE(cards.has_value()) << cards.error().message;
  return std::move(cards).value();
}

JobRecord Job(int tasks, int core, std::optional<int64_t> memory) {
  JobRecord j;
  j.id = "job-0001";
  for (int i = 0; i < tasks; ++i) {
    TaskRecord t;
    t.index = i;
    t.role = TaskRole::kTask;
    t.share = core::MgpuShare{core, memory};
    j.tasks.push_back(t);
  }
  return j;
}

int Placed(const JobRecord& j) {
  int n = 0;
  for (const auto& t : j.tasks) n += t.state == TaskState::kPlaced ? 1 : 0;
  return n;
}

TEST(QueueCards, PlacesTheSixteenthWorkerOnACardButNotTheSeventeenth) {
  QueueCards cards = Cards(1);
  JobRecord job = Job(17, 5, 256);
  JobPlacement p = cards.PlaceJob(job, core::Strategy::kBinpack, false);
  EXPECT_EQ(p.placed, 16);
  EXPECT_FALSE(p.complete);
  EXPECT_EQ(job.tasks[15].state, TaskState::kPlaced);
  EXPECT_EQ(job.tasks[16].state, TaskState::kPending);
  EXPECT_FALSE(job.tasks[16].allocation.has_value());
  EXPECT_EQ(cards.Gpus()[0].workers, 16);
  EXPECT_EQ(cards.Gpus()[0].core_used, 80);  // Core is not what stops the 17th.
}

TEST(QueueCards, FillsACardToExactlyOneHundredCoreAndNoFurther) {
  QueueCards cards = Cards(1);
  JobRecord a = Job(2, 30, 1000);
  JobRecord b = Job(1, 40, 1000);
  JobRecord c = Job(1, 5, 256);
  EXPECT_TRUE(cards.PlaceJob(a, core::Strategy::kBinpack, false).complete);
  EXPECT_TRUE(cards.PlaceJob(b, core::Strategy::kBinpack, false).complete);
  EXPECT_EQ(cards.Gpus()[0].core_used, 100);
  JobPlacement p = cards.PlaceJob(c, core::Strategy::kBinpack, false);
  EXPECT_FALSE(p.complete);
  EXPECT_EQ(Placed(c), 0);
  EXPECT_NE(p.reason.find("does not fit yet"), std::string::npos);
}

TEST(QueueCards, KeepsTheMemoryReserveFreeOnEachCard) {
  QueueCards cards = Cards(1);
  JobRecord fits = Job(1, 50, 24064);  // 24576 - 512.
  JobRecord over = Job(1, 5, 256);
  EXPECT_TRUE(cards.PlaceJob(fits, core::Strategy::kBinpack, false).complete);
  EXPECT_FALSE(cards.PlaceJob(over, core::Strategy::kBinpack, false).complete);
}

TEST(QueueCards, PlacesThreeSharesOfCore30ToACardWithBinpack) {
  QueueCards cards = Cards(1, "ml.g5.48xlarge");
  JobRecord job = Job(20, 30, 1000);
  ASSERT_TRUE(cards.PlaceJob(job, core::Strategy::kBinpack, false).complete);
  std::map<int, int> per_card;
  for (const auto& t : job.tasks) ++per_card[t.gpus.at(0)];
  ASSERT_EQ(per_card.size(), 7u);  // 6 cards x 3 + 1 card x 2.
  for (int g = 0; g < 6; ++g) EXPECT_EQ(per_card[g], 3) << "card " << g;
}

TEST(QueueCards, SpreadsSharesOverCardsWithSpread) {
  QueueCards cards = Cards(1, "ml.g5.12xlarge");
  JobRecord job = Job(4, 30, 1000);
  ASSERT_TRUE(cards.PlaceJob(job, core::Strategy::kSpread, false).complete);
  std::set<int> used;
  for (const auto& t : job.tasks) used.insert(t.gpus.at(0));
  EXPECT_EQ(used.size(), 4u);
}

// docs/mgpu.md: BINPACK fills the fullest card that fits first, SPREAD the emptiest. Cards at
// core 40, 10, 70 and 0: a first-fit or round-robin placement picks other cards.
TEST(QueueCards, BinpackPicksTheFullestCardThatFitsAndSpreadTheEmptiest) {
  QueueCards cards = Cards(1, "ml.g5.12xlarge");  // 4 cards
  auto place = [&](int core, core::Strategy strategy) {
    JobRecord j = Job(1, core, 1000);
    EXPECT_TRUE(cards.PlaceJob(j, strategy, false).complete) << core;
    return j.tasks[0].gpus.at(0);
  };
  EXPECT_EQ(place(40, core::Strategy::kSpread), 0);  // all empty: the first
  EXPECT_EQ(place(10, core::Strategy::kSpread), 1);  // the emptiest: 1, 2 and 3 at 0
  EXPECT_EQ(place(70, core::Strategy::kSpread), 2);
  EXPECT_EQ(place(20, core::Strategy::kBinpack), 2);  // 70 is the fullest that fits: 90
  EXPECT_EQ(place(35, core::Strategy::kBinpack), 0);  // 90 does not fit 35; 40 is next: 75
  EXPECT_EQ(place(5, core::Strategy::kSpread), 3);    // 75, 10, 90, 0: the emptiest
  EXPECT_EQ(place(5, core::Strategy::kSpread), 3);    // 75, 10, 90, 5
  EXPECT_EQ(place(10, core::Strategy::kSpread), 1);   // 75, 10, 90, 10: a tie, the lower card
}

TEST(QueueCards, GangPlacesNothingWhenNotEveryTaskFits) {
  QueueCards cards = Cards(2);
  JobRecord first = Job(1, 60, 1000);
  ASSERT_TRUE(cards.PlaceJob(first, core::Strategy::kBinpack, false).complete);
  JobRecord gang = Job(2, 60, 1000);  // One fits beside the first job's 60%, two do not.
  JobPlacement p = cards.PlaceJob(gang, core::Strategy::kBinpack, true);
  EXPECT_FALSE(p.complete);
  EXPECT_EQ(p.placed, 0);
  EXPECT_EQ(Placed(gang), 0);
  EXPECT_NE(p.reason.find("gang"), std::string::npos);
  // Nothing of the gang stayed on the cards.
  int core = 0;
  for (const auto& g : cards.Gpus()) core += g.core_used;
  EXPECT_EQ(core, 60);
}

TEST(QueueCards, WithoutGangPlacesWhatFitsAndLeavesTheRestPending) {
  QueueCards cards = Cards(2);
  JobRecord first = Job(1, 60, 1000);
  ASSERT_TRUE(cards.PlaceJob(first, core::Strategy::kBinpack, false).complete);
  JobRecord job = Job(2, 60, 1000);
  JobPlacement p = cards.PlaceJob(job, core::Strategy::kBinpack, false);
  EXPECT_EQ(p.placed, 1);
  EXPECT_FALSE(p.complete);
}

TEST(QueueCards, UsesWholeCardsOnAQueueWithoutMgpu) {
  QueueCards cards = Cards(1, "ml.g5.12xlarge", false);
  JobRecord job = Job(5, 100, std::nullopt);
  JobPlacement p = cards.PlaceJob(job, core::Strategy::kBinpack, false);
  EXPECT_EQ(p.placed, 4);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(job.tasks[i].allocation->kind, core::RequestKind::kWholeGpus);
}

TEST(QueueCards, ReportsAJobThatCanNeverFitOnIdleCards) {
  QueueCards cards = Cards(1);
  JobRecord two_cards = Job(1, 200, std::nullopt);
  EXPECT_FALSE(cards.FitsWhenIdle(two_cards, false).has_value());
  JobRecord gang = Job(4, 30, 1000);  // 120% on one card.
  EXPECT_FALSE(cards.FitsWhenIdle(gang, true).has_value());
  EXPECT_TRUE(cards.FitsWhenIdle(gang, false).has_value());
}

TEST(QueueCards, RestoresAPersistedAllocationAfterARestart) {
  QueueCards before = Cards(1);
  JobRecord job = Job(1, 70, 1000);
  ASSERT_TRUE(before.PlaceJob(job, core::Strategy::kBinpack, false).complete);
  QueueCards after = Cards(1);
  ASSERT_TRUE(after.Restore(*job.tasks[0].allocation).ok());
  JobRecord next = Job(1, 40, 1000);
  EXPECT_FALSE(after.PlaceJob(next, core::Strategy::kBinpack, false).complete);
}

}  // namespace
}  // namespace carve::server::queues
