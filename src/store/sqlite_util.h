// Thin RAII and error helpers over the SQLite C API, shared by SqliteStore and its migrations.
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>

#include "common/result.h"

namespace carve::store {

// Maps a SQLite result code to carve's codes: BUSY, LOCKED, IOERR, FULL, CANTOPEN, PROTOCOL and
// NOMEM are Unavailable (transient or environmental; the write did not happen), CORRUPT/NOTADB
// are Internal, anything else Internal. The message names `what` and SQLite's own text.
Error SqliteError(sqlite3* db, int rc, std::string_view what);

// Runs one or more statements without results.
Status Exec(sqlite3* db, std::string_view sql);

// A prepared statement, finalized on destruction. Not thread-safe (like its connection).
class Statement {
 public:
  Statement() = default;
  static Result<Statement> Prepare(sqlite3* db, std::string_view sql);
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  sqlite3_stmt* get() const { return stmt_; }
  // Resets and clears bindings so the statement can be reused.
  void Reset();
  void BindText(int index, std::string_view text);
  void BindInt64(int index, int64_t value);
  // SQLITE_ROW -> true, SQLITE_DONE -> false, anything else -> the mapped error.
  Result<bool> Step(std::string_view what);
  std::string ColumnText(int col) const;
  int64_t ColumnInt64(int col) const;

 private:
  explicit Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace carve::store
