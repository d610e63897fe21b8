#include "store/sqlite_migrations.h"

#include <gtest/gtest.h>

#include <array>

#include "store/sqlite_util.h"
#include "store/store_test_env.h"

namespace carve::store {
namespace {

class Migrations : public ::testing::Test {
 protected:
  Migrations() {
    EXPECT_EQ(sqlite3_open((dir_.path() / "m.db").string().c_str(), &db_), SQLITE_OK);
  }
  ~Migrations() override { sqlite3_close(db_); }
  bool TableExists(const std::string& name) {
    auto s = Statement::Prepare(db_, "SELECT 1 FROM sqlite_master WHERE name = '" + name + "'");
    return s.has_value() && s->Step("probe").value_or(false);
  }
  TempDir dir_;
  sqlite3* db_ = nullptr;
};

constexpr std::array kTwo = {
    Migration{1, "t1", "CREATE TABLE t1 (x INTEGER);"},
    Migration{2, "t2 from t1", "CREATE TABLE t2 AS SELECT x FROM t1;"},
};

TEST_F(Migrations, AppliesAllPendingInOrderAndRecordsTheVersion) {
  auto v = ApplyMigrations(db_, kTwo);
  ASSERT_TRUE(v.has_value()) << v.error().message;
  EXPECT_EQ(*v, 2);
  EXPECT_EQ(SchemaVersion(db_).value_or(-1), 2);
  EXPECT_TRUE(TableExists("t1"));
  EXPECT_TRUE(TableExists("t2"));
}

TEST_F(Migrations, RunsOnlyTheMigrationsNewerThanTheDatabase) {
  ASSERT_EQ(ApplyMigrations(db_, std::span(kTwo).first(1)).value_or(-1), 1);
  ASSERT_TRUE(Exec(db_, "INSERT INTO t1 VALUES (42)").ok());
  // Re-running migration 1 would fail (table exists); only migration 2 may run.
  ASSERT_EQ(ApplyMigrations(db_, kTwo).value_or(-1), 2);
  auto s = Statement::Prepare(db_, "SELECT x FROM t2");
  ASSERT_TRUE(s->Step("read").value_or(false));
  EXPECT_EQ(s->ColumnInt64(0), 42);
  EXPECT_EQ(ApplyMigrations(db_, kTwo).value_or(-1), 2);  // Idempotent.
}

TEST_F(Migrations, AFailingMigrationLeavesThePreviousVersionAndNoPartialSchema) {
  constexpr std::array kBroken = {
      Migration{1, "t1", "CREATE TABLE t1 (x INTEGER);"},
      Migration{2, "half", "CREATE TABLE half (y INTEGER); INSERT INTO missing VALUES (1);"},
  };
  auto v = ApplyMigrations(db_, kBroken);
  ASSERT_FALSE(v.has_value());
  EXPECT_NE(v.error().message.find("schema migration 2 (half)"), std::string::npos)
      << v.error().message;
  EXPECT_EQ(SchemaVersion(db_).value_or(-1), 1);
  EXPECT_TRUE(TableExists("t1"));
  EXPECT_FALSE(TableExists("half"));
}

TEST_F(Migrations, RefusesADatabaseNewerThanTheBinary) {
  ASSERT_TRUE(Exec(db_, "PRAGMA user_version = 9").ok());
  auto v = ApplyMigrations(db_, kTwo);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(v.error().message.find("version 9"), std::string::npos);
}

TEST_F(Migrations, RejectsNonConsecutiveNumbering) {
  constexpr std::array kGap = {Migration{1, "a", "SELECT 1;"}, Migration{3, "c", "SELECT 1;"}};
  auto v = ApplyMigrations(db_, kGap);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(SchemaVersion(db_).value_or(-1), 0);
}

TEST(StoreMigrations, AreNumberedConsecutivelyFromOne) {
  int expected = 1;
  for (const Migration& m : StoreMigrations()) EXPECT_EQ(m.version, expected++);
  EXPECT_GE(expected, 2);
}

}  // namespace
}  // namespace carve::store
