// Store: carve's durable state, as versioned JSON documents keyed by (account, kind, name).
//
// Every control-plane object (model, endpoint config, endpoint, inference component, queue,
// job, node) is one Record. A write returns only after its transaction is durable: an
// acknowledged write survives kill -9 and power loss (SqliteStore: WAL, synchronous=FULL).
//
// Errors: NotFound (no such record), AlreadyExists (Create of an existing key),
// FailedPrecondition (a version check failed: someone else wrote first), Unavailable (the
// database is busy or the disk failed; the write did not happen), InvalidArgument (bad key).
// Implementations are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/result.h"

namespace carve::store {

struct Key {
  std::string account;  // 12-digit AWS-style account id; "" for fleet-global records.
  std::string kind;     // "Model", "EndpointConfig", "Endpoint", "InferenceComponent", ...
  std::string name;
  friend bool operator==(const Key&, const Key&) = default;
  friend auto operator<=>(const Key&, const Key&) = default;
};

struct Record {
  Key key;
  std::string body;         // JSON text; the store does not interpret it.
  int64_t version = 0;      // 1 on create, +1 on every update; assigned by the store.
  int64_t created_ms = 0;   // Unix millis, assigned by the store on create.
  int64_t updated_ms = 0;   // Unix millis, assigned by the store on every write.
};

// One write inside an atomic batch.
struct Put {
  Key key;
  std::string body;
  // nullopt: create (AlreadyExists if present). 0: upsert regardless.
  // N > 0: update only if the current version is N (FailedPrecondition otherwise).
  std::optional<int64_t> expected_version;
};
struct Remove {
  Key key;
  std::optional<int64_t> expected_version;  // nullopt: delete whatever is there (NotFound if none).
};
using Mutation = std::variant<Put, Remove>;

struct ListOptions {
  std::string name_prefix;    // Only names starting with this.
  std::string after_name;     // Resume after this name (exclusive), for paging.
  int limit = 0;              // 0: no limit.
};

// What a watcher missed since it last asked (Store::TakeChanges).
struct Changes {
  std::set<Key> keys;       // Written or removed, each once.
  bool everything = false;  // A new watcher, or more than kMaxPendingChanges: re-list the kinds.
};

class Store {
 public:
  // Keys a watcher may have pending before it is told `everything` instead.
  static constexpr size_t kMaxPendingChanges = 100000;

  virtual ~Store() = default;

  virtual Result<Record> Get(const Key& key) = 0;
  // Records of one kind in one account, ordered by name.
  virtual Result<std::vector<Record>> List(const std::string& account, const std::string& kind,
                                           const ListOptions& options) = 0;
  // Records of one kind in every account (for reconcilers), ordered by (account, name).
  virtual Result<std::vector<Record>> ListAllAccounts(const std::string& kind) = 0;
  // Applies all mutations atomically, or none. Returns the records as written (removed ones are
  // omitted). Durable when it returns success, and noted for watchers before it returns.
  Result<std::vector<Record>> Commit(std::vector<Mutation> mutations);

  // The most distinct keys one Commit may write (etcd: its --max-txn-ops, less the leader's
  // fence); SIZE_MAX when there is no limit. Callers that write many records split them into
  // commits this size, each consistent on its own.
  virtual size_t max_commit_keys() const { return SIZE_MAX; }

  // Conveniences over Commit for one record.
  Result<Record> Create(Key key, std::string body);
  Result<Record> Update(Key key, std::string body, int64_t expected_version);
  Status Delete(Key key);

  // The change feed, for controllers that keep records parsed in memory and re-read only what
  // was written since their last pass (issue 14). Watch the kinds once; each TakeChanges then
  // returns the keys of those kinds that commits wrote or removed since the previous one (a new
  // watcher's first answer says `everything`). A key is noted after its commit is durable and
  // before Commit returns, so a caller that wakes a controller after its write is always seen.
  // The feed covers this process's commits; a replicated store also notes its peers' (etcd's
  // watch, issue 15).
  int Watch(std::set<std::string> kinds);
  Changes TakeChanges(int watcher);
  void Unwatch(int watcher);

 protected:
  // The implementation's atomic commit (the contract of Commit above).
  virtual Result<std::vector<Record>> Apply(std::vector<Mutation> mutations) = 0;
  // Records that `keys` changed, for every watcher of their kinds.
  void NoteChanged(const std::vector<Key>& keys);
  // Tells every watcher to re-list: what changed can no longer be named (a replicated store's
  // history was compacted past what its watch had seen).
  void NoteEverything();

 private:
  struct Watcher {
    std::set<std::string> kinds;
    Changes pending;
  };
  std::mutex feed_mu_;
  std::map<int, Watcher> watchers_;  // Guarded by feed_mu_.
  int next_watcher_ = 0;             // Guarded by feed_mu_.
};

}  // namespace carve::store
