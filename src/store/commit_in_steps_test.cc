// CommitInSteps over a FakeStore that emulates etcd's per-transaction key limit.
#include "store/commit_in_steps.h"

#include <gtest/gtest.h>

#include <string>

#include "common/fake_clock.h"
#include "store/fake_store.h"

namespace carve::store {
namespace {

Key Child(int i) { return {"acct", "Job", "job-" + std::to_string(i)}; }
const Key kParent{"acct", "Queue", "q"};

class CommitInStepsTest : public ::testing::Test {
 protected:
  CommitInStepsTest() {
    EXPECT_TRUE(store_.Create(kParent, "{}").has_value());
    for (int i = 0; i < 7; ++i) EXPECT_TRUE(store_.Create(Child(i), "{}").has_value());
  }
  static std::vector<Mutation> RemoveChildren() {
    std::vector<Mutation> out;
    out.reserve(7);
    for (int i = 0; i < 7; ++i) out.push_back(Remove{Child(i), int64_t{1}});
    return out;
  }
  size_t Children() { return store_.List("acct", "Job", {}).value().size(); }

  FakeClock clock_;
  FakeStore store_{clock_};
};

TEST_F(CommitInStepsTest, WithoutALimitItIsOneCommit) {
  const int before = store_.successful_commits();
  auto written = CommitInSteps(store_, RemoveChildren(), Remove{kParent, int64_t{1}});
  ASSERT_TRUE(written.has_value()) << written.error().message;
  EXPECT_EQ(store_.successful_commits(), before + 1);
  EXPECT_EQ(Children(), 0u);
  EXPECT_FALSE(store_.Get(kParent).has_value());
}

TEST_F(CommitInStepsTest, OverTheLimitTheRestGoFirstAndTheLastWriteLast) {
  store_.set_max_commit_keys(3);
  const int before = store_.successful_commits();
  std::vector<Mutation> puts;
  puts.reserve(7);
  for (int i = 0; i < 7; ++i) puts.push_back(Put{Child(i), "\"new\"", int64_t{1}});
  auto written = CommitInSteps(store_, std::move(puts), Put{kParent, "\"new\"", int64_t{1}});
  ASSERT_TRUE(written.has_value()) << written.error().message;
  // 5 ahead (3 + 2), then the parent with the 2 that fit beside it.
  EXPECT_EQ(store_.successful_commits(), before + 3);
  ASSERT_EQ(written->size(), 8u);
  EXPECT_EQ(written->back().key.kind, "Job");
  EXPECT_EQ(written->at(5).key, kParent);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(store_.Get(Child(i))->version, 2) << i;
  EXPECT_EQ(store_.Get(kParent)->version, 2);
}

TEST_F(CommitInStepsTest, AFailedStepLeavesTheLastWriteUndoneAndSaysHowManyLanded) {
  store_.set_max_commit_keys(3);
  store_.FailNthCommit(2, Unavailable("disk"));
  size_t landed = 99;
  auto written = CommitInSteps(store_, RemoveChildren(), Remove{kParent, int64_t{1}}, &landed);
  ASSERT_FALSE(written.has_value());
  EXPECT_EQ(written.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(landed, 3u);
  EXPECT_EQ(Children(), 4u);
  EXPECT_TRUE(store_.Get(kParent).has_value());  // Never an orphan: the parent goes last.
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(store_.Get(Child(i)).has_value()) << i;
}

TEST_F(CommitInStepsTest, AFailedFirstStepSaysNoneLanded) {
  store_.set_max_commit_keys(3);
  store_.FailNthCommit(1, Unavailable("disk"));
  size_t landed = 99;  // Whatever the caller left there.
  auto written = CommitInSteps(store_, RemoveChildren(), Remove{kParent, int64_t{1}}, &landed);
  ASSERT_FALSE(written.has_value());
  EXPECT_EQ(landed, 0u);
  EXPECT_EQ(Children(), 7u);
}

TEST_F(CommitInStepsTest, ALimitOfOneKeyWritesOneAtATimeTheLastWriteAlone) {
  store_.set_max_commit_keys(1);
  const int before = store_.successful_commits();
  auto written = CommitInSteps(store_, RemoveChildren(), Remove{kParent, int64_t{1}});
  ASSERT_TRUE(written.has_value()) << written.error().message;
  EXPECT_EQ(store_.successful_commits(), before + 8);
  EXPECT_EQ(Children(), 0u);
  EXPECT_FALSE(store_.Get(kParent).has_value());
}

}  // namespace
}  // namespace carve::store
