// The Store contract (store.h), run against every implementation: FakeStore, SqliteStore and
// EtcdStore (on a real etcd member, reading from etcd and from its watch cache) must be
// interchangeable.
#include <gtest/gtest.h>

#include <thread>
#include <type_traits>

#include "store/store_test_env.h"

namespace carve::store {
namespace {

template <typename Factory>
class StoreContract : public ::testing::Test {
 protected:
  StoreContract() : store_(Factory::Make(dir_, clock_)) {}
  ~StoreContract() override {
    if constexpr (std::is_same_v<Factory, EtcdCachedStoreFactory>) {
      if (store_ == nullptr) return;
      EXPECT_EQ(static_cast<EtcdStore&>(*store_).cache_fallbacks(), 0)
          << "a read went to etcd: the cache did not catch up";
    }
  }
  TempDir dir_;
  FakeClock clock_{1'700'000'000'000};
  std::unique_ptr<Store> store_;
};

using Implementations = ::testing::Types<FakeStoreFactory, SqliteStoreFactory, EtcdStoreFactory,
                                         EtcdCachedStoreFactory>;
TYPED_TEST_SUITE(StoreContract, Implementations);

TYPED_TEST(StoreContract, CreateAssignsVersionOneAndTimestamps) {
  auto r = this->store_->Create(K("Model", "m1"), R"({"a":1})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->version, 1);
  EXPECT_EQ(r->created_ms, 1'700'000'000'000);
  EXPECT_EQ(r->updated_ms, 1'700'000'000'000);
  auto got = this->store_->Get(K("Model", "m1"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->body, R"({"a":1})");
  EXPECT_EQ(got->key, K("Model", "m1"));
}

TYPED_TEST(StoreContract, CreateOfExistingKeyIsAlreadyExistsAndKeepsTheOriginal) {
  ASSERT_TRUE(this->store_->Create(K("Model", "m1"), "first").has_value());
  auto again = this->store_->Create(K("Model", "m1"), "second");
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, ErrorCode::kAlreadyExists);
  EXPECT_NE(again.error().message.find("Model 'm1'"), std::string::npos) << again.error().message;
  EXPECT_EQ(this->store_->Get(K("Model", "m1"))->body, "first");
}

TYPED_TEST(StoreContract, GetOfMissingKeyIsNotFound) {
  auto r = this->store_->Get(K("Model", "nope"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
}

TYPED_TEST(StoreContract, UpdateBumpsVersionAndKeepsCreatedTime) {
  ASSERT_TRUE(this->store_->Create(K("Model", "m1"), "v1").has_value());
  this->clock_.Advance(std::chrono::milliseconds(500));
  auto r = this->store_->Update(K("Model", "m1"), "v2", 1);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->version, 2);
  EXPECT_EQ(r->created_ms, 1'700'000'000'000);
  EXPECT_EQ(r->updated_ms, 1'700'000'000'500);
  EXPECT_EQ(this->store_->Get(K("Model", "m1"))->version, 2);
}

TYPED_TEST(StoreContract, UpdateWithStaleVersionIsFailedPreconditionAndChangesNothing) {
  ASSERT_TRUE(this->store_->Create(K("Model", "m1"), "v1").has_value());
  ASSERT_TRUE(this->store_->Update(K("Model", "m1"), "v2", 1).has_value());
  auto stale = this->store_->Update(K("Model", "m1"), "lost", 1);
  ASSERT_FALSE(stale.has_value());
  EXPECT_EQ(stale.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(stale.error().message.find("version 2"), std::string::npos) << stale.error().message;
  EXPECT_EQ(this->store_->Get(K("Model", "m1"))->body, "v2");
}

TYPED_TEST(StoreContract, UpdateOfMissingKeyIsNotFound) {
  auto r = this->store_->Update(K("Model", "ghost"), "x", 3);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
}

TYPED_TEST(StoreContract, UpsertWritesWhetherOrNotTheKeyExists) {
  ASSERT_EQ(this->store_->Update(K("Node", "n1", ""), "a", 0)->version, 1);
  ASSERT_EQ(this->store_->Update(K("Node", "n1", ""), "b", 0)->version, 2);
  EXPECT_EQ(this->store_->Get(K("Node", "n1", ""))->body, "b");
}

TYPED_TEST(StoreContract, DeleteRemovesAndSecondDeleteIsNotFound) {
  ASSERT_TRUE(this->store_->Create(K("Model", "m1"), "x").has_value());
  ASSERT_TRUE(this->store_->Delete(K("Model", "m1")).ok());
  EXPECT_EQ(this->store_->Get(K("Model", "m1")).error().code, ErrorCode::kNotFound);
  auto again = this->store_->Delete(K("Model", "m1"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);
}

TYPED_TEST(StoreContract, RemoveWithStaleVersionIsFailedPrecondition) {
  ASSERT_TRUE(this->store_->Create(K("Model", "m1"), "x").has_value());
  auto r = this->store_->Commit({Remove{K("Model", "m1"), 7}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(this->store_->Get(K("Model", "m1")).has_value());
}

TYPED_TEST(StoreContract, BatchIsAllOrNothing) {
  ASSERT_TRUE(this->store_->Create(K("Model", "taken"), "orig").has_value());
  auto r = this->store_->Commit({Put{K("Model", "a"), "a", std::nullopt},
                                 Put{K("Model", "taken"), "x", 0},
                                 Put{K("Model", "taken"), "dup", std::nullopt}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kAlreadyExists);
  EXPECT_EQ(this->store_->Get(K("Model", "a")).error().code, ErrorCode::kNotFound);
  auto taken = this->store_->Get(K("Model", "taken"));
  EXPECT_EQ(taken->body, "orig");
  EXPECT_EQ(taken->version, 1);
}

TYPED_TEST(StoreContract, BatchSeesItsOwnEarlierWrites) {
  auto r =
      this->store_->Commit({Put{K("Model", "a"), "one", std::nullopt},
                            Put{K("Model", "a"), "two", 1}, Remove{K("Model", "b"), std::nullopt}});
  ASSERT_FALSE(r.has_value());  // "b" does not exist: nothing of the batch lands.
  EXPECT_EQ(this->store_->Get(K("Model", "a")).error().code, ErrorCode::kNotFound);
  auto ok = this->store_->Commit(
      {Put{K("Model", "a"), "one", std::nullopt}, Put{K("Model", "a"), "two", 1}});
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[1].version, 2);
  EXPECT_EQ(this->store_->Get(K("Model", "a"))->body, "two");
}

TYPED_TEST(StoreContract, EmptyKeyPartsAreInvalidArgument) {
  auto r = this->store_->Create(K("Model", ""), "x");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(this->store_->Get(K("", "n")).error().code, ErrorCode::kInvalidArgument);
}

TYPED_TEST(StoreContract, ListIsPerAccountAndKindOrderedByName) {
  for (const char* n : {"c", "a", "b"}) {
    ASSERT_TRUE(this->store_->Create(K("Model", n), n).has_value());
  }
  ASSERT_TRUE(this->store_->Create(K("Model", "z", "222222222222"), "other").has_value());
  ASSERT_TRUE(this->store_->Create(K("Endpoint", "a"), "other").has_value());
  auto r = this->store_->List("111111111111", "Model", {});
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].key.name, "a");
  EXPECT_EQ((*r)[1].key.name, "b");
  EXPECT_EQ((*r)[2].key.name, "c");
}

TYPED_TEST(StoreContract, ListPagesWithPrefixAfterNameAndLimit) {
  for (const char* n : {"ep-1", "ep-2", "ep-3", "ep-4", "other"}) {
    ASSERT_TRUE(this->store_->Create(K("Endpoint", n), "{}").has_value());
  }
  auto page1 = this->store_->List("111111111111", "Endpoint", {"ep-", "", 2});
  ASSERT_EQ(page1->size(), 2u);
  EXPECT_EQ(page1->back().key.name, "ep-2");
  auto page2 = this->store_->List("111111111111", "Endpoint", {"ep-", "ep-2", 2});
  ASSERT_EQ(page2->size(), 2u);
  EXPECT_EQ(page2->front().key.name, "ep-3");
  EXPECT_EQ(page2->back().key.name, "ep-4");
  auto page3 = this->store_->List("111111111111", "Endpoint", {"ep-", "ep-4", 2});
  EXPECT_TRUE(page3->empty());
}

TYPED_TEST(StoreContract, ListAllAccountsOrdersByAccountThenName) {
  ASSERT_TRUE(this->store_->Create(K("Endpoint", "b", "222222222222"), "{}").has_value());
  ASSERT_TRUE(this->store_->Create(K("Endpoint", "z", "111111111111"), "{}").has_value());
  ASSERT_TRUE(this->store_->Create(K("Endpoint", "a", "222222222222"), "{}").has_value());
  ASSERT_TRUE(this->store_->Create(K("Model", "m", "111111111111"), "{}").has_value());
  auto r = this->store_->ListAllAccounts("Endpoint");
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].key, K("Endpoint", "z", "111111111111"));
  EXPECT_EQ((*r)[1].key, K("Endpoint", "a", "222222222222"));
  EXPECT_EQ((*r)[2].key, K("Endpoint", "b", "222222222222"));
}

TYPED_TEST(StoreContract, ConcurrentCreatesOfOneKeyHaveExactlyOneWinner) {
  constexpr int kThreads = 16;
  std::atomic<int> won{0}, exists{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      auto r = this->store_->Create(K("Endpoint", "contended"), std::to_string(i));
      if (r.has_value()) {
        ++won;
      } else if (r.error().code == ErrorCode::kAlreadyExists) {
        ++exists;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(won.load(), 1);
  EXPECT_EQ(exists.load(), kThreads - 1);
}

TYPED_TEST(StoreContract, ConcurrentCreatesOfDistinctKeysAllLand) {
  constexpr int kThreads = 8, kPerThread = 25;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto name = "m-" + std::to_string(t) + "-" + std::to_string(i);
        if (!this->store_->Create(K("Model", name), "{}").has_value()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(this->store_->List("111111111111", "Model", {})->size(),
            static_cast<size_t>(kThreads * kPerThread));
}

// The change feed: a watcher learns exactly the keys of its kinds that successful commits
// wrote or removed since it last asked.
TYPED_TEST(StoreContract, ChangeFeedNamesTheKeysWrittenSinceTheLastTake) {
  Store& store = *this->store_;
  const int watcher = store.Watch({"Endpoint", "InferenceComponent"});
  EXPECT_TRUE(store.TakeChanges(watcher).everything);  // A new watcher lists everything once.
  ASSERT_TRUE(store.Create(K("Endpoint", "e1"), "{}").has_value());
  ASSERT_TRUE(store.Create(K("Model", "m1"), "{}").has_value());  // Not a watched kind.
  ASSERT_TRUE(store
                  .Commit({Put{K("InferenceComponent", "c1"), "{}", std::nullopt},
                           Put{K("Endpoint", "e1"), "{\"v\":2}", 1}})
                  .has_value());
  Changes c = store.TakeChanges(watcher);
  EXPECT_FALSE(c.everything);
  EXPECT_EQ(c.keys, (std::set<Key>{K("Endpoint", "e1"), K("InferenceComponent", "c1")}));
  EXPECT_TRUE(store.TakeChanges(watcher).keys.empty());  // Taken once.

  // A failed commit writes nothing, so it notes nothing; a removal is a change.
  EXPECT_FALSE(store.Create(K("Endpoint", "e1"), "{}").has_value());
  EXPECT_FALSE(store.Update(K("Endpoint", "e2"), "{}", 3).has_value());
  EXPECT_TRUE(store.TakeChanges(watcher).keys.empty());
  ASSERT_TRUE(store.Delete(K("InferenceComponent", "c1")).ok());
  EXPECT_EQ(store.TakeChanges(watcher).keys, (std::set<Key>{K("InferenceComponent", "c1")}));

  // Watchers are independent; an unknown or removed one is told to re-list.
  const int other = store.Watch({"Model"});
  (void)store.TakeChanges(other);
  ASSERT_TRUE(store.Create(K("Model", "m2"), "{}").has_value());
  EXPECT_TRUE(store.TakeChanges(watcher).keys.empty());
  EXPECT_EQ(store.TakeChanges(other).keys, (std::set<Key>{K("Model", "m2")}));
  store.Unwatch(other);
  EXPECT_TRUE(store.TakeChanges(other).everything);
}

TYPED_TEST(StoreContract, ChangeFeedSaysEverythingWhenTooMuchIsPending) {
  Store& store = *this->store_;
  const int watcher = store.Watch({"Model"});
  (void)store.TakeChanges(watcher);
  // In commits of 100 keys, which every Store takes in one transaction (etcd: 128 at most).
  for (size_t i = 0; i <= Store::kMaxPendingChanges; i += 100) {
    std::vector<Mutation> some;
    for (size_t j = i; j < std::min(i + 100, Store::kMaxPendingChanges + 1); ++j) {
      some.push_back(Put{K("Model", "m" + std::to_string(j)), "{}", std::nullopt});
    }
    ASSERT_TRUE(store.Commit(std::move(some)).has_value());
  }
  Changes c = store.TakeChanges(watcher);
  EXPECT_TRUE(c.everything);
  EXPECT_TRUE(c.keys.empty());
  EXPECT_TRUE(store.TakeChanges(watcher).keys.empty());
}

}  // namespace
}  // namespace carve::store
