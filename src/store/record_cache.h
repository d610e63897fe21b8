// RecordCache: every record under a replicated store's prefix, held in memory and kept current
// from the store's watch, so a replica answers reads without asking etcd for the records
// (EtcdStore's cached reads, docs/ha.md).
//
// The cache knows the etcd revision it reflects: every event at or below revision() has been
// applied. The watch delivers a revision's events together and in order, so after the events
// of revision R are applied the cache is exactly the store at R (for the records; the keys
// under PREFIX/_ha are not records and are left out). A reader that learned etcd's current
// revision from a quorum read and waits until the cache reaches it (AwaitRevision) reads every
// write acknowledged before it asked: Kubernetes' consistent reads from cache (KEP-2340) work
// this way. Reads are ordered as every Store orders them. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "store/store.h"

namespace carve::store {

// One watch event: the record as written, or nullopt when the key was deleted.
struct CacheEvent {
  Key key;
  std::optional<Record> record;
};

class RecordCache {
 public:
  // Replaces everything with a full listing taken at `revision` (at start, and after the watch
  // could not resume across a compaction).
  void Reset(std::vector<Record> records, int64_t revision);
  // Applies the events of one watch response, all at or below `revision`, in the order etcd
  // sent them.
  void Apply(const std::vector<CacheEvent>& events, int64_t revision);
  // A progress notification: nothing under the prefix changed up to `revision`.
  void Advance(int64_t revision);

  // Blocks until the cache reflects `revision`, or `wait` passed: whether it does.
  bool AwaitRevision(int64_t revision, std::chrono::milliseconds wait) const;
  int64_t revision() const;
  size_t size() const;

  // As Store::Get, List and ListAllAccounts answer them.
  std::optional<Record> Get(const Key& key) const;
  std::vector<Record> List(const std::string& account, const std::string& kind,
                           const ListOptions& options) const;
  std::vector<Record> ListAllAccounts(const std::string& kind) const;

 private:
  // (kind, account, name): one kind's records are adjacent, ordered by (account, name).
  using Slot = std::tuple<std::string, std::string, std::string>;
  static Slot SlotOf(const Key& key) { return {key.kind, key.account, key.name}; }
  void Raise(int64_t revision);  // Holding mu_.

  mutable std::mutex mu_;
  mutable std::condition_variable advanced_;
  std::map<Slot, Record> records_;  // Guarded by mu_.
  int64_t revision_ = 0;            // Guarded by mu_.
};

}  // namespace carve::store
