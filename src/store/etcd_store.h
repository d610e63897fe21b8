// EtcdStore: the replicated Store, on an etcd v3 cluster (issue 15; operations in docs/ha.md).
//
// Layout: record (account, kind, name) is the etcd key PREFIX/kind/account/name, and its value
// is a one-line header "carve1 VERSION CREATED_MS UPDATED_MS COMMIT_ID" and the body. carve's
// version is kept in the value, not taken from etcd's per-key version, because one Commit may
// write a key twice (create, then update) and etcd allows one write per key per transaction.
//
// A Commit is one etcd transaction. The store reads the current value of every key the
// mutations touch, applies them in order in memory with exactly SqliteStore's rules (so a failed
// commit reports AlreadyExists, NotFound or a version conflict for the first mutation that
// breaks, and later mutations see earlier ones), and sends one Txn: for each distinct key a
// compare on what was read (mod_revision, or create_revision 0 for an absent key) and its final
// put or delete. A compare that fails means another writer came between: the Txn's failure
// branch reads every key at that revision, and the store plans again against it. A commit of
// creates only skips the first read: it assumes its keys absent, and a failed compare says
// which is not (AlreadyExists), so a create costs one round trip. A Txn whose outcome is unknown
// (sent, then the connection broke or the member timed out) is never resent blindly: the store
// re-reads the keys and finds its own COMMIT_ID in them if it landed.
//
// Limits, from etcd: at most `max_commit_keys` distinct keys per Commit (etcd's
// --max-txn-ops, 128 by default, one fewer with a fence) and `max_request_bytes` per Txn
// (--max-request-bytes, 1.5 MiB): a larger Commit is InvalidArgument naming the limit, before
// anything is sent. Kind and account must not contain '/'.
//
// The change feed covers every writer: this process's commits are noted before Commit returns,
// as with every Store, and a watch on PREFIX notes everyone's (peers' too), resuming from the
// last revision it saw after a broken stream, and telling watchers to re-list everything after
// a compaction it could not resume across.
// Reads are linearizable, so a client reads its own acknowledged writes through any replica.
// By default each is a quorum read of the records. With `cache_reads` (a standby replica) the
// store keeps every record in memory from that watch (record_cache.h) and a read asks etcd only
// for its current revision (a quorum read of one absent key), waits until the watch has
// delivered it, and answers from memory; when the watch does not get there within `cache_wait`
// (another user of the cluster wrote outside the prefix, or the watch is behind) the read goes
// to etcd as without a cache. Thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "common/clock.h"
#include "store/etcd_client.h"
#include "store/record_cache.h"
#include "store/store.h"

namespace carve::store {

// A leader's fence: the leadership key it won and that key's create_revision. While a fence is
// set every Commit also requires the key to still have that create_revision, which it loses the
// moment the leader's lease expires (etcd deletes the key) or another replica wins it.
struct EtcdFence {
  std::string key;
  int64_t create_revision = 0;
};

struct EtcdStoreOptions {
  std::string prefix = "/carve";  // Every key lives under PREFIX/.
  const Clock* clock = nullptr;   // nullptr: SystemClock. Must outlive the store.
  size_t max_commit_keys = 128;
  size_t max_request_bytes = size_t{1536} * 1024;
  int max_commit_attempts = 32;  // Conflicting writers are retried this often, then Unavailable.
  bool watch = true;             // Feed other writers' commits into the change feed.
  // Keep a watch cache and answer reads from it (needs `watch`); SetCachedReads turns it off.
  bool cache_reads = false;
  std::chrono::milliseconds cache_wait{250};
  // Refuse every Commit until SetFence: a server replica's store, which writes only once it
  // leads (a standby's request handlers must never write around the leader).
  bool require_fence = false;
};

class EtcdStore final : public Store {
 public:
  // Opens the store on `client`'s cluster: one read proves a member answers. Unavailable when
  // none does.
  static Result<std::unique_ptr<EtcdStore>> Open(std::unique_ptr<EtcdClient> client,
                                                 EtcdStoreOptions options = {});
  // From "etcd://HOST:PORT,...[/PREFIX]" or etcds:// (ParseEtcdUrl); `options.prefix` is the
  // URL's. `tls` gives the certificates for etcds:// (its `enabled` comes from the URL).
  static Result<std::unique_ptr<EtcdStore>> OpenUrl(std::string_view url,
                                                    EtcdStoreOptions options = {},
                                                    EtcdTls tls = {});
  ~EtcdStore() override;

  Result<Record> Get(const Key& key) override;
  Result<std::vector<Record>> List(const std::string& account, const std::string& kind,
                                   const ListOptions& options) override;
  Result<std::vector<Record>> ListAllAccounts(const std::string& kind) override;

  // Writes `records` exactly as they are (version and timestamps kept), in one Txn, each only
  // if its key is absent: AlreadyExists naming the first key that is not, and nothing written.
  // For moving a deployment from another store (store_migrate.h); at most max_commit_keys().
  Status Import(const std::vector<Record>& records);

  // From now on every Commit is conditional on `fence`; a Commit the fence refuses is
  // FailedPrecondition saying this replica is no longer the leader, and writes nothing.
  void SetFence(EtcdFence fence);
  // Commits the fence refused (for tests and logs).
  int64_t fenced() const { return fenced_.load(); }

  // Whether reads come from the watch cache (only with options.cache_reads; a replica that
  // starts to lead turns them off, since its own commits reach the cache only through the
  // watch). The cache stays current either way.
  void SetCachedReads(bool on);
  bool cached_reads() const { return cached_reads_.load(); }
  // Reads answered from the cache, and reads that went to etcd because it was behind.
  int64_t cache_hits() const { return cache_hits_.load(); }
  int64_t cache_fallbacks() const { return cache_fallbacks_.load(); }
  // Records the cache holds, and the revision it reflects (0 and 0 without a cache).
  size_t cached_records() const { return cache_ ? cache_->size() : 0; }
  int64_t cache_revision() const { return cache_ ? cache_->revision() : 0; }

  // One fewer than etcd's per-Txn limit, whether or not a fence is set yet.
  size_t max_commit_keys() const override { return options_.max_commit_keys - 1; }

  EtcdClient& client() { return *client_; }
  const std::string& prefix() const { return options_.prefix; }
  // Txns this store sent whose compares failed because another writer came first, and
  // commits whose outcome was unknown and were found landed by re-reading (for tests and logs).
  int64_t conflicts() const { return conflicts_.load(); }
  int64_t unknown_outcomes_resolved() const { return unknown_resolved_.load(); }

  // A record as etcd holds it, and one Commit worked out against what was read (etcd_store.cc).
  struct Stored;
  struct Plan;

 protected:
  Result<std::vector<Record>> Apply(std::vector<Mutation> mutations) override;

 private:
  EtcdStore(std::unique_ptr<EtcdClient> client, EtcdStoreOptions options);

  std::string EtcdKey(const Key& key) const;
  // The record key of an etcd key; nullopt for what is not a record (PREFIX/_ha/...).
  std::optional<Key> KeyOf(std::string_view etcd_key) const;
  Result<std::vector<std::optional<Stored>>> ReadKeys(const std::vector<Key>& keys);
  Result<nlohmann::json> BuildTxn(const Plan& plan, const std::optional<EtcdFence>& fence) const;
  // The records in [start, end), at most `limit` (0: all), read at one revision (returned in
  // `at_revision` when given).
  Result<std::vector<Record>> RangeRecords(const std::string& start, const std::string& end,
                                           int limit, int64_t* at_revision = nullptr);
  // Whether this read may come from the cache: cached reads are on, and the cache caught up
  // with etcd's current revision within cache_wait.
  bool CacheCaughtUp();
  void WatchLoop(int64_t next_revision);
  // After a compaction the watch could not resume across: lists again (the cache, when there is
  // one), tells watchers to re-list, and sets where the watch resumes.
  Status ResumeAfterCompaction(int64_t& next_revision);
  // Revisions of this store's own commits, which Store::Commit noted already: the watch skips
  // their events, so a watcher is told of a commit once.
  void NoteOwnRevision(int64_t revision);
  bool TakeOwnRevision(int64_t revision);

  std::unique_ptr<EtcdClient> client_;
  const EtcdStoreOptions options_;
  const Clock& clock_;
  std::atomic<int64_t> conflicts_{0};
  std::atomic<int64_t> unknown_resolved_{0};
  std::atomic<int64_t> fenced_{0};
  std::mutex fence_mu_;
  std::optional<EtcdFence> fence_;  // Guarded by fence_mu_.
  std::mutex own_mu_;
  std::set<int64_t> own_revisions_;     // Guarded by own_mu_.
  std::unique_ptr<RecordCache> cache_;  // With options.cache_reads; fed by the watch.
  std::atomic<bool> cached_reads_{false};
  std::atomic<int64_t> cache_hits_{0};
  std::atomic<int64_t> cache_fallbacks_{0};
  std::atomic<bool> stopping_{false};
  std::thread watcher_;
};

// The record key of an etcd key under `prefix`; nullopt for what is not a record
// (PREFIX/_ha/..., or outside the prefix).
std::optional<Key> RecordKeyOf(std::string_view prefix, std::string_view etcd_key);

// The revision a watch response vouches for without events: a progress notification's header
// revision (every event up to it was sent). nullopt for a response with events, and for the
// answer to the watch's creation, whose header is etcd's current revision while the events up
// to it may still be on their way: a cache that took it as reached would answer a read from
// before those writes (docs/ha.md, "Reads on a standby").
std::optional<int64_t> ProgressRevision(const nlohmann::json& message);

// One watch response into `cache`: its events, applied together at the last one's revision, or
// a progress notification's revision. EtcdStore's watch feeds its cache with it; etcd_store_test
// replays the messages of an interleaving the real watch shows only now and then.
void FeedWatchResponse(RecordCache& cache, std::string_view prefix, const nlohmann::json& message);

}  // namespace carve::store
