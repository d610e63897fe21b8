// MigrateRecords from a real SQLite file into a real etcd member.
#include "store/store_migrate.h"

#include <gtest/gtest.h>

#include "store/store_test_env.h"

namespace carve::store {
namespace {

TEST(StoreMigrate, EveryRecordMovesWithItsVersionAndTimestamps) {
  TempDir dir;
  FakeClock clock{1'700'000'000'000};
  auto sqlite = SqliteStore::Open((dir.path() / "carve.db").string(), {.clock = &clock});
  ASSERT_TRUE(sqlite.has_value());
  SqliteStore& from = **sqlite;
  ASSERT_TRUE(from.Create(K("Model", "m"), R"({"a":1})").has_value());
  clock.Advance(std::chrono::seconds(5));
  ASSERT_TRUE(from.Update(K("Model", "m"), R"({"a":2})", 1).has_value());
  ASSERT_TRUE(from.Create(K("Node", "n1", ""), "{}").has_value());
  for (int i = 0; i < 300; i += 100) {  // More than one etcd transaction's worth.
    std::vector<Mutation> some;
    for (int j = i; j < i + 100; ++j) {
      some.push_back(Put{K("InferenceComponentCopy", "c" + std::to_string(j)), "{}", std::nullopt});
    }
    ASSERT_TRUE(from.Commit(std::move(some)).has_value());
  }
  auto to = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, UniqueEtcdPrefix());
  auto report = MigrateRecords(from, *to);
  ASSERT_TRUE(report.has_value()) << report.error().message;
  EXPECT_EQ(report->records, 302u);
  EXPECT_EQ(report->records_by_kind.at("InferenceComponentCopy"), 300u);
  auto m = to->Get(K("Model", "m"));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->body, R"({"a":2})");
  EXPECT_EQ(m->version, 2);
  EXPECT_EQ(m->created_ms, 1'700'000'000'000);
  EXPECT_EQ(m->updated_ms, 1'700'000'005'000);
  EXPECT_EQ(to->Get(K("Node", "n1", ""))->version, 1);
  // Versions carry on from where they were.
  EXPECT_EQ(to->Update(K("Model", "m"), "{}", 2)->version, 3);

  // A second migration into the same prefix is refused, naming a record already there.
  auto again = MigrateRecords(from, *to);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, ErrorCode::kAlreadyExists);
  EXPECT_NE(again.error().message.find("already exists"), std::string::npos);
}

}  // namespace
}  // namespace carve::store
