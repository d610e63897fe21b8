// Versioned schema migrations for SqliteStore, tracked in PRAGMA user_version.
//
// Migration N moves the schema from version N-1 to N. ApplyMigrations runs every migration
// newer than the database's user_version, in ascending order, each in its own transaction
// that also bumps user_version, so a failed migration leaves the database at the previous
// version with none of its statements applied. Migrations are append-only: never edit or
// renumber a released one, add the next.
#pragma once

#include <sqlite3.h>

#include <span>
#include <string_view>

#include "common/result.h"

namespace carve::store {

struct Migration {
  int version;  // 1, 2, 3, ... consecutive.
  std::string_view description;
  std::string_view sql;  // One or more statements.
};

// The store's own schema history.
std::span<const Migration> StoreMigrations();

// Returns the resulting schema version. FailedPrecondition if the database is newer than the
// newest migration given (a downgrade); InvalidArgument if `migrations` is not numbered
// 1..N consecutively; a failing migration's error names its version and description.
Result<int> ApplyMigrations(sqlite3* db, std::span<const Migration> migrations);

// The database's PRAGMA user_version.
Result<int> SchemaVersion(sqlite3* db);

}  // namespace carve::store
