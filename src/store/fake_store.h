// FakeStore: an in-memory Store with the same semantics as SqliteStore, for tests.
//
// Same contract as store.h (versions, AlreadyExists/NotFound/FailedPrecondition, all-or-nothing
// Commit), minus durability. Tests can make the Nth Commit from now fail with a chosen error
// (nothing is written by that Commit). Thread-safe: every method takes one mutex.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "store/store.h"

namespace carve::store {

class FakeStore final : public Store {
 public:
  // `clock` stamps created_ms/updated_ms and must outlive the store.
  explicit FakeStore(const Clock& clock = SystemClock::Get());

  Result<Record> Get(const Key& key) override;
  Result<std::vector<Record>> List(const std::string& account, const std::string& kind,
                                   const ListOptions& options) override;
  Result<std::vector<Record>> ListAllAccounts(const std::string& kind) override;

  // The `n`th Commit call from now (1 = the next one) returns `error` and writes nothing.
  // Later calls succeed again. One injected failure at a time; a new call replaces it.
  void FailNthCommit(int n, Error error);
  // Like FailNthCommit, but that commit writes first: its answer is lost, as an etcd Txn's can
  // be (an unknown outcome), and the caller sees `error` for a write that landed.
  void LoseNthAnswer(int n, Error error);
  // The `n`th read from now (Get, List or ListAllAccounts; 1 = the next one) returns `error`.
  // Later reads succeed again. One injected read failure at a time.
  void FailNthRead(int n, Error error);
  // Number of Commit calls that wrote (succeeded) so far.
  int successful_commits() const;
  // Emulates a store with a per-transaction limit (EtcdStore's): a Commit of more distinct keys
  // is InvalidArgument, and max_commit_keys() reports it.
  void set_max_commit_keys(size_t keys);
  size_t max_commit_keys() const override;

 protected:
  // Store::Commit calls this, then notes the keys for the change feed.
  Result<std::vector<Record>> Apply(std::vector<Mutation> mutations) override;

 private:
  using MapKey = std::tuple<std::string, std::string, std::string>;  // (kind, account, name)

  const Clock& clock_;
  mutable std::mutex mu_;
  std::map<MapKey, Record> records_;     // Guarded by mu_.
  int commits_until_failure_ = 0;        // Guarded by mu_. 0: no failure armed.
  std::optional<Error> injected_error_;  // Guarded by mu_.
  bool injected_after_write_ = false;    // Guarded by mu_. The armed failure comes after writing.
  int successful_commits_ = 0;           // Guarded by mu_.
  int reads_until_failure_ = 0;          // Guarded by mu_. 0: no read failure armed.
  std::optional<Error> injected_read_error_;  // Guarded by mu_.
  // The armed read failure, when this read is the one; counts the read. Holds mu_.
  std::optional<Error> TakeReadFailureLocked();
  size_t max_commit_keys_ = SIZE_MAX;    // Guarded by mu_.
};

}  // namespace carve::store
