// SqliteStore-only behaviour: durability settings, reopening, group commit isolation.
#include "store/sqlite_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "store/sqlite_migrations.h"
#include "store/sqlite_util.h"
#include "store/store_test_env.h"

namespace carve::store {
namespace {

std::string DbPath(const TempDir& dir) { return (dir.path() / "carve.db").string(); }

TEST(SqliteStore, OpensInWalModeWithFullSync) {
  TempDir dir;
  auto store = SqliteStore::Open(DbPath(dir));
  ASSERT_TRUE(store.has_value()) << store.error().message;
  EXPECT_EQ((*store)->journal_mode(), "wal");
  EXPECT_EQ((*store)->synchronous(), 2);  // 2 == FULL.
  EXPECT_EQ((*store)->schema_version(), static_cast<int>(StoreMigrations().size()));
}

TEST(SqliteStore, DataSurvivesCloseAndReopen) {
  TempDir dir;
  {
    auto store = SqliteStore::Open(DbPath(dir));
    ASSERT_TRUE(store.has_value());
    ASSERT_TRUE((*store)->Create(K("Model", "m1"), R"({"x":1})").has_value());
    ASSERT_TRUE((*store)->Update(K("Model", "m1"), R"({"x":2})", 1).has_value());
  }
  auto store = SqliteStore::Open(DbPath(dir));
  ASSERT_TRUE(store.has_value()) << store.error().message;
  auto r = (*store)->Get(K("Model", "m1"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, R"({"x":2})");
  EXPECT_EQ(r->version, 2);
}

TEST(SqliteStore, RefusesADatabaseWithANewerSchema) {
  TempDir dir;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(DbPath(dir).c_str(), &db), SQLITE_OK);
    ASSERT_TRUE(Exec(db, "PRAGMA user_version = 999").ok());
    sqlite3_close(db);
  }
  auto store = SqliteStore::Open(DbPath(dir));
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
}

TEST(SqliteStore, UnopenablePathIsUnavailable) {
  auto store = SqliteStore::Open("/nonexistent-dir/carve.db");
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code, ErrorCode::kUnavailable);
}

// Many callers land in one group-commit batch; the ones whose create collides get
// AlreadyExists and the others in the same transaction still commit.
TEST(SqliteStore, OneCallersConflictDoesNotFailTheOthersInItsBatch) {
  TempDir dir;
  auto opened = SqliteStore::Open(DbPath(dir));
  ASSERT_TRUE(opened.has_value());
  Store& store = **opened;
  ASSERT_TRUE(store.Create(K("Model", "taken"), "orig").has_value());
  constexpr int kThreads = 32;
  std::atomic<int> ok{0}, exists{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      // Every even caller collides, every odd caller writes a fresh key.
      auto name = i % 2 == 0 ? std::string("taken") : "fresh-" + std::to_string(i);
      auto r = store.Create(K("Model", name), "new");
      if (r.has_value()) ++ok;
      if (!r.has_value() && r.error().code == ErrorCode::kAlreadyExists) ++exists;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads / 2);
  EXPECT_EQ(exists.load(), kThreads / 2);
  EXPECT_EQ(store.Get(K("Model", "taken"))->body, "orig");
  EXPECT_EQ(store.List("111111111111", "Model", {})->size(), static_cast<size_t>(kThreads / 2 + 1));
}

TEST(SqliteStore, BatchFailureInsideGroupCommitRollsBackOnlyThatCaller) {
  TempDir dir;
  auto opened = SqliteStore::Open(DbPath(dir), {.max_batch = 1024});
  ASSERT_TRUE(opened.has_value());
  Store& store = **opened;
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      // Each caller writes two keys; caller 0's second mutation fails, so its first must not land.
      std::vector<Mutation> m;
      m.emplace_back(Put{K("Model", "first-" + std::to_string(i)), "{}", std::nullopt});
      if (i == 0) {
        m.emplace_back(Remove{K("Model", "missing"), std::nullopt});
      } else {
        m.emplace_back(Put{K("Model", "second-" + std::to_string(i)), "{}", std::nullopt});
      }
      if (!store.Commit(std::move(m)).has_value()) ++failed;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 1);
  EXPECT_EQ(store.Get(K("Model", "first-0")).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store.List("111111111111", "Model", {})->size(), 30u);
}

// Another process holding the write lock makes commits time out as Unavailable (retryable),
// with nothing written; once the lock is released, commits succeed again.
TEST(SqliteStore, LockedDatabaseIsUnavailableAndWritesNothing) {
  TempDir dir;
  auto opened = SqliteStore::Open(DbPath(dir), {.busy_timeout_ms = 50});
  ASSERT_TRUE(opened.has_value());
  Store& store = **opened;
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(DbPath(dir).c_str(), &other), SQLITE_OK);
  ASSERT_TRUE(Exec(other, "BEGIN IMMEDIATE").ok());
  auto r = store.Create(K("Model", "m1"), "{}");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable) << r.error().message;
  ASSERT_TRUE(Exec(other, "ROLLBACK").ok());
  sqlite3_close(other);
  EXPECT_EQ(store.Get(K("Model", "m1")).error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(store.Create(K("Model", "m1"), "{}").has_value());
}

// A commit hook that parks the writer inside COMMIT until the test releases it.
class CommitGate {
 public:
  bool Hook() {
    std::unique_lock lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
    return commit_;
  }
  bool WaitEntered(std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return entered_ > 0; });
  }
  void Release(bool commit) {
    std::lock_guard lock(mu_);
    released_ = true;
    commit_ = commit;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;        // Guarded by mu_.
  bool released_ = false;  // Guarded by mu_.
  bool commit_ = true;     // Guarded by mu_.
};

// Commit answers only after COMMIT returned: while the writer is held inside COMMIT, the caller
// has no answer and readers do not see the write.
TEST(SqliteStore, NoCallerIsAnsweredBeforeItsCommitReturns) {
  TempDir dir;
  auto gate = std::make_shared<CommitGate>();
  auto opened = SqliteStore::Open(DbPath(dir), {.commit_hook = [gate] { return gate->Hook(); }});
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  Store& store = **opened;
  auto caller =
      std::async(std::launch::async, [&] { return store.Create(K("Model", "m1"), "{}"); });
  ASSERT_TRUE(gate->WaitEntered(std::chrono::seconds(30))) << "the writer never reached COMMIT";
  // A second is ample for an answer that was already given to reach the caller.
  EXPECT_EQ(caller.wait_for(std::chrono::seconds(1)), std::future_status::timeout)
      << "the caller was answered while its COMMIT had not returned";
  EXPECT_EQ(store.Get(K("Model", "m1")).error().code, ErrorCode::kNotFound);
  gate->Release(/*commit=*/true);
  auto created = caller.get();
  ASSERT_TRUE(created.has_value()) << created.error().message;
  EXPECT_EQ(store.Get(K("Model", "m1"))->version, 1);
}

TEST(SqliteStore, ACallerHeldInsideAFailingCommitIsAnsweredUnavailable) {
  TempDir dir;
  auto gate = std::make_shared<CommitGate>();
  auto opened = SqliteStore::Open(DbPath(dir), {.commit_hook = [gate] { return gate->Hook(); }});
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  Store& store = **opened;
  auto caller =
      std::async(std::launch::async, [&] { return store.Create(K("Model", "m1"), "{}"); });
  ASSERT_TRUE(gate->WaitEntered(std::chrono::seconds(30))) << "the writer never reached COMMIT";
  EXPECT_EQ(caller.wait_for(std::chrono::seconds(1)), std::future_status::timeout)
      << "the caller was answered while its COMMIT had not returned";
  gate->Release(/*commit=*/false);
  auto r = caller.get();
  ASSERT_FALSE(r.has_value()) << "a caller saw success for a COMMIT that failed";
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(store.Get(K("Model", "m1")).error().code, ErrorCode::kNotFound);
}

// When COMMIT fails, every caller of the batch gets Unavailable, those whose own mutations failed
// too (they were judged against writes that are gone), and nothing of the batch is stored, even
// after a reopen. The store keeps working afterwards.
TEST(SqliteStore, AFailedCommitAnswersEveryCallerUnavailableAndWritesNothing) {
  TempDir dir;
  auto fail = std::make_shared<std::atomic<bool>>(false);
  {
    auto opened = SqliteStore::Open(DbPath(dir), {.commit_hook = [fail] { return !*fail; }});
    ASSERT_TRUE(opened.has_value()) << opened.error().message;
    Store& store = **opened;
    ASSERT_TRUE(store.Create(K("Model", "taken"), "orig").has_value());
    *fail = true;
    constexpr int kThreads = 8;
    std::vector<Result<Record>> results(kThreads, Unavailable("not run"));
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        // Even callers collide with "taken" (AlreadyExists on their own), odd ones are fresh.
        auto name = i % 2 == 0 ? std::string("taken") : "fresh-" + std::to_string(i);
        results[i] = store.Create(K("Model", name), "new");
      });
    }
    for (auto& t : threads) t.join();
    for (int i = 0; i < kThreads; ++i) {
      ASSERT_FALSE(results[i].has_value()) << "caller " << i << " saw success; COMMIT failed";
      EXPECT_EQ(results[i].error().code, ErrorCode::kUnavailable) << results[i].error().message;
      EXPECT_NE(results[i].error().message.find("nothing was written"), std::string::npos)
          << results[i].error().message;
    }
    EXPECT_EQ(store.List("111111111111", "Model", {})->size(), 1u);
    EXPECT_EQ(store.Get(K("Model", "taken"))->body, "orig");
    *fail = false;
    EXPECT_TRUE(store.Create(K("Model", "after"), "{}").has_value());
  }
  auto reopened = SqliteStore::Open(DbPath(dir));
  ASSERT_TRUE(reopened.has_value());
  auto names = (*reopened)->List("111111111111", "Model", {});
  ASSERT_TRUE(names.has_value());
  ASSERT_EQ(names->size(), 2u);
  EXPECT_EQ((*names)[0].key.name, "after");
  EXPECT_EQ((*names)[1].key.name, "taken");
}

// A full disk (here: the database capped at a page count it has reached) refuses writes as
// Unavailable, saying the disk is full and that nothing was written; a batch that failed leaves
// no record behind, reads go on, and once space frees (records deleted) writes succeed again
// with nothing to reopen.
TEST(SqliteStore, AFullDiskIsUnavailableWritesNothingAndRecoversWhenSpaceFrees) {
  TempDir dir;
  auto opened = SqliteStore::Open(DbPath(dir), {.max_page_count = 24});
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  Store& store = **opened;
  const std::string body(1500, 'x');
  int acknowledged = 0;
  Result<Record> refused = store.Create(K("Model", "m0"), body);
  for (int i = 1; refused.has_value() && i < 1000; ++i) {
    ++acknowledged;
    refused = store.Create(K("Model", "m" + std::to_string(i)), body);
  }
  ASSERT_FALSE(refused.has_value()) << "the cap was never reached";
  ASSERT_GT(acknowledged, 0);
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message.find("the disk holding the database is full"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("nothing was written"), std::string::npos);
  EXPECT_NE(refused.error().message.find(DbPath(dir)), std::string::npos);

  const std::string refused_name = "m" + std::to_string(acknowledged);
  EXPECT_EQ(store.Get(K("Model", refused_name)).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store.List("111111111111", "Model", {})->size(), static_cast<size_t>(acknowledged));

  for (int i = 0; i < acknowledged / 2; ++i) {
    ASSERT_TRUE(store.Delete(K("Model", "m" + std::to_string(i))).ok());
  }
  auto again = store.Create(K("Model", refused_name), body);
  EXPECT_TRUE(again.has_value()) << again.error().message;
}

}  // namespace
}  // namespace carve::store
