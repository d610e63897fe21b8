#include "store/sqlite_store.h"

#include <sqlite3.h>

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

#include "store/sqlite_migrations.h"
#include "store/sqlite_util.h"
#include "store/store_rules.h"

namespace carve::store {

namespace {

constexpr std::string_view kColumns = "kind, account, name, body, version, created_ms, updated_ms";

Record ReadRecord(const Statement& s) {
  Record r;
  r.key = Key{s.ColumnText(1), s.ColumnText(0), s.ColumnText(2)};
  r.body = s.ColumnText(3);
  r.version = s.ColumnInt64(4);
  r.created_ms = s.ColumnInt64(5);
  r.updated_ms = s.ColumnInt64(6);
  return r;
}

void CloseDb(sqlite3* db) { sqlite3_close_v2(db); }
using DbPtr = std::unique_ptr<sqlite3, decltype(&CloseDb)>;

Result<DbPtr> OpenConnection(const std::string& path, int busy_timeout_ms) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  DbPtr db(raw, &CloseDb);
  if (rc != SQLITE_OK) return SqliteError(raw, rc, "opening database " + path);
  sqlite3_busy_timeout(db.get(), busy_timeout_ms);
  // WAL + synchronous=FULL: every COMMIT fsyncs the WAL before returning (sqlite.org/wal.html),
  // which is what makes an acknowledged Commit durable. NORMAL would only sync at checkpoints.
  CARVE_RETURN_IF_ERROR(Exec(db.get(), "PRAGMA journal_mode=WAL"));
  CARVE_RETURN_IF_ERROR(Exec(db.get(), "PRAGMA synchronous=FULL"));
  return db;
}

// sqlite3_commit_hook's callback: non-zero turns the COMMIT into a rollback.
int CallCommitHook(void* hook) { return (*static_cast<std::function<bool()>*>(hook))() ? 0 : 1; }

// One queued Commit call.
struct Pending {
  std::vector<Mutation> mutations;
  std::promise<Result<std::vector<Record>>> done;
};

}  // namespace

class SqliteStore::Impl {
 public:
  Impl(std::string path, SqliteStoreOptions options, DbPtr writer)
      : path_(std::move(path)),
        options_(std::move(options)),
        clock_(options_.clock != nullptr ? *options_.clock : SystemClock::Get()),
        writer_(std::move(writer)) {}

  ~Impl() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  Status PrepareWriter() {
    sqlite3* db = writer_.get();
    if (options_.max_page_count > 0) {
      CARVE_RETURN_IF_ERROR(
          Exec(db, "PRAGMA max_page_count=" + std::to_string(options_.max_page_count)));
    }
    CARVE_ASSIGN_OR_RETURN(
        select_,
        Statement::Prepare(db, "SELECT " + std::string(kColumns) +
                                   " FROM records WHERE kind = ?1 AND account = ?2 AND name = ?3"));
    CARVE_ASSIGN_OR_RETURN(
        upsert_, Statement::Prepare(db, "INSERT OR REPLACE INTO records (" + std::string(kColumns) +
                                            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    CARVE_ASSIGN_OR_RETURN(
        delete_, Statement::Prepare(
                     db, "DELETE FROM records WHERE kind = ?1 AND account = ?2 AND name = ?3"));
    // Installed after the migrations, which ran before on this connection: the hook sees only
    // the writer thread's batches.
    if (options_.commit_hook) {
      commit_hook_ = options_.commit_hook;
      sqlite3_commit_hook(db, &CallCommitHook, &commit_hook_);
    }
    // Checkpoints stay SQLite's automatic ones (every ~1000 WAL pages, inside a COMMIT on this
    // thread). A background checkpointer thread was measured slower on a 2-core box: it
    // competes for CPU and its fsync of the main file delays the WAL fsync.
    thread_ = std::thread([this] { WriterLoop(); });
    return OkStatus();
  }

  Result<std::vector<Record>> Commit(std::vector<Mutation> mutations) {
    for (const Mutation& m : mutations) CARVE_RETURN_IF_ERROR(ValidateKey(MutationKey(m)));
    Pending p{std::move(mutations), {}};
    auto result = p.done.get_future();
    {
      std::lock_guard lock(mu_);
      if (stopping_) return Unavailable("store " + path_ + " is closing");
      queue_.push_back(&p);
    }
    cv_.notify_one();
    return result.get();
  }

  template <typename Fn>
  auto WithReader(Fn fn) -> decltype(fn(std::declval<sqlite3*>())) {
    DbPtr db(nullptr, &CloseDb);
    {
      std::lock_guard lock(readers_mu_);
      if (!readers_.empty()) {
        db = std::move(readers_.back());
        readers_.pop_back();
      }
    }
    if (!db) {
      CARVE_ASSIGN_OR_RETURN(db, OpenConnection(path_, options_.busy_timeout_ms));
    }
    auto result = fn(db.get());
    std::lock_guard lock(readers_mu_);
    readers_.push_back(std::move(db));
    return result;
  }

  Result<std::vector<Record>> Query(std::string_view sql, const std::vector<std::string>& text_args,
                                    int64_t limit) {
    return WithReader([&](sqlite3* db) -> Result<std::vector<Record>> {
      CARVE_ASSIGN_OR_RETURN(auto stmt, Statement::Prepare(db, sql));
      for (size_t i = 0; i < text_args.size(); ++i) {
        stmt.BindText(static_cast<int>(i) + 1, text_args[i]);
      }
      if (limit != 0) stmt.BindInt64(static_cast<int>(text_args.size()) + 1, limit);
      std::vector<Record> out;
      while (true) {
        CARVE_ASSIGN_OR_RETURN(bool row, stmt.Step("reading records"));
        if (!row) break;
        out.push_back(ReadRecord(stmt));
      }
      return out;
    });
  }

  const std::string& path() const { return path_; }
  sqlite3* writer() const { return writer_.get(); }
  const SqliteStoreOptions& options() const { return options_; }

 private:
  void WriterLoop() {
    while (true) {
      std::vector<Pending*> batch;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // Stopping and drained.
        while (!queue_.empty() && static_cast<int>(batch.size()) < options_.max_batch) {
          batch.push_back(queue_.front());
          queue_.pop_front();
        }
      }
      RunBatch(batch);
    }
  }

  // One transaction, one SAVEPOINT per caller, one fsync at COMMIT.
  void RunBatch(const std::vector<Pending*>& batch) {
    std::vector<std::optional<Result<std::vector<Record>>>> results(batch.size());
    Status begun = Exec(writer(), "BEGIN IMMEDIATE");
    if (!begun.ok()) {
      for (Pending* p : batch) p->done.set_value(NothingWritten(begun.error()));
      return;
    }
    Status healthy = OkStatus();  // Turns into an error if the transaction can't be trusted.
    for (size_t i = 0; i < batch.size() && healthy.ok(); ++i) {
      healthy = Exec(writer(), "SAVEPOINT caller");
      if (!healthy.ok()) break;
      Result<std::vector<Record>> r = Apply(batch[i]->mutations);
      if (r.has_value()) {
        healthy = Exec(writer(), "RELEASE caller");
      } else if (sqlite3_get_autocommit(writer()) != 0) {
        // SQLite rolled the whole transaction back itself, as it does on SQLITE_FULL and some
        // I/O errors: the callers before this one lost their writes too. The batch fails with
        // this caller's error, which names the cause.
        healthy = r.error();
      } else {
        // Undo just this caller. If even that fails, its half-applied writes could reach the
        // COMMIT, so the whole batch is abandoned below.
        healthy = Exec(writer(), "ROLLBACK TO caller");
        if (healthy.ok()) healthy = Exec(writer(), "RELEASE caller");
        r = NothingWritten(r.error());
      }
      results[i] = std::move(r);
    }
    Status committed = healthy.ok() ? Exec(writer(), "COMMIT") : healthy;
    if (!committed.ok()) {
      if (sqlite3_get_autocommit(writer()) == 0) (void)Exec(writer(), "ROLLBACK");
      Error e = committed.error();
      if (healthy.ok()) e.message = "commit failed: " + e.message;
      e.code = ErrorCode::kUnavailable;
      e = NothingWritten(std::move(e));
      // Every caller, failed ones too: their errors were judged against writes that are now
      // rolled back, so only "retry" is a true answer.
      for (auto& r : results) r = e;
    }
    for (size_t i = 0; i < batch.size(); ++i) batch[i]->done.set_value(std::move(*results[i]));
  }

  // An Unavailable error as callers see it: which store, and that the call may be retried.
  // Other errors are returned as they are.
  Error NothingWritten(Error e) const {
    if (e.code != ErrorCode::kUnavailable) return e;
    e.message = "store " + path_ + ": " + e.message + "; nothing was written, retry the call";
    return e;
  }

  Result<std::optional<Record>> Current(const Key& key) {
    select_.Reset();
    select_.BindText(1, key.kind);
    select_.BindText(2, key.account);
    select_.BindText(3, key.name);
    CARVE_ASSIGN_OR_RETURN(bool row, select_.Step("reading " + DescribeKey(key)));
    std::optional<Record> out;
    if (row) out = ReadRecord(select_);
    select_.Reset();
    return out;
  }

  Result<std::vector<Record>> Apply(std::vector<Mutation>& mutations) {
    const int64_t now = clock_.UnixMillis();
    std::vector<Record> out;
    for (Mutation& m : mutations) {
      const Key& key = MutationKey(m);
      CARVE_ASSIGN_OR_RETURN(std::optional<Record> cur, Current(key));
      CARVE_RETURN_IF_ERROR(CheckMutation(m, cur ? &*cur : nullptr));
      if (auto* put = std::get_if<Put>(&m)) {
        Record r{put->key, std::move(put->body), cur ? cur->version + 1 : 1,
                 cur ? cur->created_ms : now, now};
        upsert_.Reset();
        upsert_.BindText(1, key.kind);
        upsert_.BindText(2, key.account);
        upsert_.BindText(3, key.name);
        upsert_.BindText(4, r.body);
        upsert_.BindInt64(5, r.version);
        upsert_.BindInt64(6, r.created_ms);
        upsert_.BindInt64(7, r.updated_ms);
        CARVE_RETURN_IF_ERROR(upsert_.Step("writing " + DescribeKey(key)));
        out.push_back(std::move(r));
      } else {
        delete_.Reset();
        delete_.BindText(1, key.kind);
        delete_.BindText(2, key.account);
        delete_.BindText(3, key.name);
        CARVE_RETURN_IF_ERROR(delete_.Step("deleting " + DescribeKey(key)));
      }
    }
    return out;
  }

  const std::string path_;
  const SqliteStoreOptions options_;
  const Clock& clock_;
  DbPtr writer_;                        // Used only by thread_ once it runs (before that, by Open).
  Statement select_, upsert_, delete_;  // On writer_; used only by thread_.
  std::function<bool()> commit_hook_;   // Called by SQLite inside thread_'s COMMITs only.
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending*> queue_;  // Guarded by mu_.
  bool stopping_ = false;       // Guarded by mu_.

  std::mutex readers_mu_;
  std::vector<DbPtr> readers_;  // Idle read connections. Guarded by readers_mu_.
};

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                       SqliteStoreOptions options) {
  if (options.max_batch < 1) options.max_batch = 1;
  CARVE_ASSIGN_OR_RETURN(DbPtr writer, OpenConnection(path, options.busy_timeout_ms));
  CARVE_RETURN_IF_ERROR(ApplyMigrations(writer.get(), StoreMigrations()));
  auto impl = std::make_unique<Impl>(path, options, std::move(writer));
  CARVE_RETURN_IF_ERROR(impl->PrepareWriter());
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(impl)));
}

SqliteStore::SqliteStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SqliteStore::~SqliteStore() = default;

Result<Record> SqliteStore::Get(const Key& key) {
  CARVE_RETURN_IF_ERROR(ValidateKey(key));
  CARVE_ASSIGN_OR_RETURN(
      auto rows, impl_->Query("SELECT " + std::string(kColumns) +
                                  " FROM records WHERE kind = ?1 AND account = ?2 AND name = ?3",
                              {key.kind, key.account, key.name}, 0));
  if (rows.empty()) return NotFoundError(key);
  return std::move(rows.front());
}

Result<std::vector<Record>> SqliteStore::List(const std::string& account, const std::string& kind,
                                              const ListOptions& options) {
  // BINARY collation compares bytes like std::string, so the order matches FakeStore's.
  return impl_->Query(
      "SELECT " + std::string(kColumns) +
          " FROM records WHERE kind = ?1 AND account = ?2 AND name > ?3 AND name >= ?4"
          " AND substr(name, 1, length(?4)) = ?4 ORDER BY name LIMIT ?5",
      {kind, account, options.after_name, options.name_prefix},
      options.limit > 0 ? options.limit : -1);
}

Result<std::vector<Record>> SqliteStore::ListAllAccounts(const std::string& kind) {
  return impl_->Query(
      "SELECT " + std::string(kColumns) + " FROM records WHERE kind = ?1 ORDER BY account, name",
      {kind}, 0);
}

Result<std::vector<Record>> SqliteStore::Apply(std::vector<Mutation> mutations) {
  return impl_->Commit(std::move(mutations));
}

Result<std::vector<std::string>> SqliteStore::Kinds() {
  return impl_->WithReader([](sqlite3* db) -> Result<std::vector<std::string>> {
    CARVE_ASSIGN_OR_RETURN(
        auto s, Statement::Prepare(db, "SELECT DISTINCT kind FROM records ORDER BY kind"));
    std::vector<std::string> out;
    while (true) {
      CARVE_ASSIGN_OR_RETURN(bool row, s.Step("reading kinds"));
      if (!row) return out;
      out.push_back(s.ColumnText(0));
    }
  });
}

int SqliteStore::schema_version() const {
  auto v = impl_->WithReader([](sqlite3* db) { return SchemaVersion(db); });
  return v.value_or(-1);
}

std::string SqliteStore::journal_mode() const {
  auto mode = impl_->WithReader([](sqlite3* db) -> Result<std::string> {
    CARVE_ASSIGN_OR_RETURN(auto s, Statement::Prepare(db, "PRAGMA journal_mode"));
    CARVE_ASSIGN_OR_RETURN(bool row, s.Step("reading journal_mode"));
    return row ? s.ColumnText(0) : std::string();
  });
  return mode.value_or("");
}

int SqliteStore::synchronous() const {
  // synchronous is per connection; the writer's is the one that matters, so it is what
  // OpenConnection set on every connection. Read it from a reader opened the same way.
  auto sync = impl_->WithReader([](sqlite3* db) -> Result<int> {
    CARVE_ASSIGN_OR_RETURN(auto s, Statement::Prepare(db, "PRAGMA synchronous"));
    CARVE_ASSIGN_OR_RETURN(bool row, s.Step("reading synchronous"));
    return row ? static_cast<int>(s.ColumnInt64(0)) : -1;
  });
  return sync.value_or(-1);
}

}  // namespace carve::store
