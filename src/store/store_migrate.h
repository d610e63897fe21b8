// Moving a deployment's records from its SQLite file to etcd (`carve store migrate`,
// docs/ha.md): every record of every kind, with its version and timestamps, into a prefix that
// holds none of them yet.
#pragma once

#include <map>
#include <string>

#include "common/result.h"
#include "store/etcd_store.h"
#include "store/sqlite_store.h"

namespace carve::store {

struct MigrationReport {
  std::map<std::string, size_t> records_by_kind;
  size_t records = 0;
};

// Copies every record of `from` into `to` in transactions of at most to.max_commit_keys(), each
// only where its key is absent. AlreadyExists (naming the key) when `to` already holds one: a
// migration goes into an empty prefix, and one that stopped part-way is redone into a fresh
// prefix. After copying it reads every kind back from `to` and compares the counts (Internal
// when they differ).
Result<MigrationReport> MigrateRecords(SqliteStore& from, EtcdStore& to);

}  // namespace carve::store
