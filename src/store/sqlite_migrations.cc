#include "store/sqlite_migrations.h"

#include <array>
#include <string>

#include "store/sqlite_util.h"

namespace carve::store {

namespace {

// Append-only. `records` holds every control-plane object as a versioned JSON document.
// WITHOUT ROWID: the primary key is the lookup and listing order, so it clusters the table.
constexpr std::array kStoreMigrations = {
    Migration{1, "records table",
              "CREATE TABLE records ("
              "  kind TEXT NOT NULL,"
              "  account TEXT NOT NULL,"
              "  name TEXT NOT NULL,"
              "  body TEXT NOT NULL,"
              "  version INTEGER NOT NULL,"
              "  created_ms INTEGER NOT NULL,"
              "  updated_ms INTEGER NOT NULL,"
              "  PRIMARY KEY (kind, account, name)"
              ") WITHOUT ROWID;"},
};

}  // namespace

std::span<const Migration> StoreMigrations() { return kStoreMigrations; }

Result<int> SchemaVersion(sqlite3* db) {
  CARVE_ASSIGN_OR_RETURN(auto stmt, Statement::Prepare(db, "PRAGMA user_version"));
  CARVE_ASSIGN_OR_RETURN(bool row, stmt.Step("reading PRAGMA user_version"));
  if (!row) return Internal("PRAGMA user_version returned no row");
  return static_cast<int>(stmt.ColumnInt64(0));
}

Result<int> ApplyMigrations(sqlite3* db, std::span<const Migration> migrations) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1) {
      return InvalidArgument("migration at position " + std::to_string(i) + " has version " +
                             std::to_string(migrations[i].version) + "; versions must run 1.." +
                             std::to_string(migrations.size()) + " consecutively");
    }
  }
  CARVE_ASSIGN_OR_RETURN(int current, SchemaVersion(db));
  const int newest = static_cast<int>(migrations.size());
  if (current > newest) {
    return FailedPrecondition("database schema version " + std::to_string(current) +
                              " is newer than this binary's newest migration " +
                              std::to_string(newest) + "; refusing to downgrade");
  }
  for (const Migration& m : migrations.subspan(static_cast<size_t>(current))) {
    CARVE_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
    Status applied = Exec(db, m.sql);
    if (applied.ok()) {
      applied = Exec(db, "PRAGMA user_version = " + std::to_string(m.version));
    }
    if (applied.ok()) applied = Exec(db, "COMMIT");
    if (!applied.ok()) {
      (void)Exec(db, "ROLLBACK");
      Error e = applied.error();
      e.message = "schema migration " + std::to_string(m.version) + " (" +
                  std::string(m.description) + ") failed: " + e.message;
      return e;
    }
    current = m.version;
  }
  return current;
}

}  // namespace carve::store
