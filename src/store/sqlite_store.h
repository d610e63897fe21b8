// SqliteStore: the durable Store, one SQLite database file in WAL mode with synchronous=FULL.
//
// Durability: Commit returns success only after SQLite's COMMIT returned, i.e. after the WAL
// frames were fsync'ed (synchronous=FULL), so an acknowledged write survives kill -9 and power
// loss. Group commit: Commit callers queue their mutation lists; one writer thread drains the
// queue and applies up to `max_batch` callers in ONE transaction (one fsync), each caller inside
// its own SAVEPOINT, validated against the state left by the callers before it. A caller whose
// mutations fail (AlreadyExists, FailedPrecondition, ...) has its savepoint rolled back and gets
// its error; the others in the batch are unaffected. If the final COMMIT fails, every caller in
// the batch gets Unavailable and nothing was written.
//
// A full disk (SQLITE_FULL) is Unavailable too, with a message that says so and that nothing
// was written; the store needs nothing to recover: the first commit after space is freed
// succeeds.
//
// Reads (Get/List) use a pool of separate read connections (WAL readers do not block the writer)
// and see only committed data. SQLITE_BUSY/LOCKED/IOERR/FULL map to Unavailable.
// Thread-safe. One SqliteStore per database file per process.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "store/store.h"

namespace carve::store {

struct SqliteStoreOptions {
  const Clock* clock = nullptr;  // nullptr: SystemClock. Must outlive the store.
  int max_batch = 256;           // Most Commit callers folded into one transaction.
  int busy_timeout_ms = 5000;    // How long a connection waits on a lock before Unavailable.
  // Fault seam for tests: when set, the writer thread calls it inside every COMMIT (SQLite's
  // sqlite3_commit_hook), after the batch's writes and before anything of them is durable.
  // Returning false turns that COMMIT into a rollback, as a failed fsync would, so every caller
  // of the batch gets Unavailable. It may block: a test holds the writer there to see that no
  // caller has been answered while COMMIT has not returned. It must not use the store.
  std::function<bool()> commit_hook = nullptr;
  // Caps the database at this many pages (PRAGMA max_page_count); 0: no cap. A write that would
  // grow it further fails exactly as on a full disk, which is how tests fill "the disk".
  int64_t max_page_count = 0;
};

class SqliteStore final : public Store {
 public:
  // Opens (creating if absent) the database at `path`, sets WAL + synchronous=FULL, and applies
  // pending schema migrations. Errors: Unavailable (cannot open/lock the file),
  // FailedPrecondition (the file's schema is newer than this binary knows), Internal.
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                   SqliteStoreOptions options = {});
  // Stops the writer thread after the queued commits finish, then closes the connections.
  ~SqliteStore() override;

  Result<Record> Get(const Key& key) override;
  Result<std::vector<Record>> List(const std::string& account, const std::string& kind,
                                   const ListOptions& options) override;
  Result<std::vector<Record>> ListAllAccounts(const std::string& kind) override;

  // Every kind that has a record, in order (for moving the records to another store).
  Result<std::vector<std::string>> Kinds();

  // The schema version of the open database (PRAGMA user_version).
  int schema_version() const;
  // The SQLite journal and synchronous modes in effect ("wal", 2 == FULL), for tests and logs.
  std::string journal_mode() const;
  int synchronous() const;

  class Impl;

 protected:
  // Store::Commit calls this, then notes the keys for the change feed.
  Result<std::vector<Record>> Apply(std::vector<Mutation> mutations) override;

 private:
  explicit SqliteStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace carve::store
