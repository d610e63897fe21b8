// FakeStore-only behaviour: injected commit failures.
#include "store/fake_store.h"

#include <gtest/gtest.h>

namespace carve::store {
namespace {

Key K(std::string name) { return Key{"111111111111", "Model", std::move(name)}; }

TEST(FakeStore, FailsTheNthCommitAndWritesNothingForIt) {
  FakeStore store;
  store.FailNthCommit(2, Unavailable("disk on fire"));
  ASSERT_TRUE(store.Create(K("a"), "{}").has_value());
  auto failed = store.Create(K("b"), "{}");
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(failed.error().message, "disk on fire");
  EXPECT_EQ(store.Get(K("b")).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store.successful_commits(), 1);
}

TEST(FakeStore, CommitsSucceedAgainAfterTheInjectedFailure) {
  FakeStore store;
  store.FailNthCommit(1, Internal("boom"));
  EXPECT_FALSE(store.Create(K("a"), "{}").has_value());
  EXPECT_TRUE(store.Create(K("a"), "{}").has_value());
  EXPECT_TRUE(store.Create(K("b"), "{}").has_value());
}

}  // namespace
}  // namespace carve::store
