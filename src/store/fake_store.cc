#include "store/fake_store.h"

#include <set>
#include <utility>

#include "store/store_rules.h"

namespace carve::store {

FakeStore::FakeStore(const Clock& clock) : clock_(clock) {}

Result<Record> FakeStore::Get(const Key& key) {
  CARVE_RETURN_IF_ERROR(ValidateKey(key));
  std::lock_guard lock(mu_);
  if (auto e = TakeReadFailureLocked()) return *e;
  auto it = records_.find(MapKey{key.kind, key.account, key.name});
  if (it == records_.end()) return NotFoundError(key);
  return it->second;
}

Result<std::vector<Record>> FakeStore::List(const std::string& account, const std::string& kind,
                                            const ListOptions& options) {
  std::lock_guard lock(mu_);
  if (auto e = TakeReadFailureLocked()) return *e;
  std::vector<Record> out;
  const std::string& start =
      options.after_name > options.name_prefix ? options.after_name : options.name_prefix;
  for (auto it = records_.lower_bound(MapKey{kind, account, start}); it != records_.end(); ++it) {
    const auto& [k, a, name] = it->first;
    if (k != kind || a != account) break;
    if (!options.after_name.empty() && name <= options.after_name) continue;
    if (name.compare(0, options.name_prefix.size(), options.name_prefix) != 0) break;
    out.push_back(it->second);
    if (options.limit > 0 && static_cast<int>(out.size()) >= options.limit) break;
  }
  return out;
}

Result<std::vector<Record>> FakeStore::ListAllAccounts(const std::string& kind) {
  std::lock_guard lock(mu_);
  if (auto e = TakeReadFailureLocked()) return *e;
  std::vector<Record> out;
  for (auto it = records_.lower_bound(MapKey{kind, "", ""});
       it != records_.end() && std::get<0>(it->first) == kind; ++it) {
    out.push_back(it->second);
  }
  return out;
}

Result<std::vector<Record>> FakeStore::Apply(std::vector<Mutation> mutations) {
  for (const Mutation& m : mutations) CARVE_RETURN_IF_ERROR(ValidateKey(MutationKey(m)));
  std::lock_guard lock(mu_);
  if (max_commit_keys_ != SIZE_MAX) {
    std::set<Key> keys;
    for (const Mutation& m : mutations) keys.insert(MutationKey(m));
    if (keys.size() > max_commit_keys_) {
      return InvalidArgument("a commit of " + std::to_string(keys.size()) +
                             " records is more than the " + std::to_string(max_commit_keys_) +
                             " this store takes in one transaction");
    }
  }
  const bool fail = commits_until_failure_ > 0 && --commits_until_failure_ == 0;
  if (fail && !injected_after_write_) {
    Error e = std::move(*injected_error_);
    injected_error_.reset();
    return e;
  }
  // Stage every change in an overlay so a failure part-way leaves records_ untouched.
  std::map<MapKey, std::optional<Record>> staged;
  auto current = [&](const MapKey& mk) -> const Record* {
    if (auto s = staged.find(mk); s != staged.end()) return s->second ? &*s->second : nullptr;
    auto it = records_.find(mk);
    return it == records_.end() ? nullptr : &it->second;
  };
  const int64_t now = clock_.UnixMillis();
  std::vector<Record> out;  // One per Put, as that Put wrote it.
  for (Mutation& m : mutations) {
    const Key& key = MutationKey(m);
    MapKey mk{key.kind, key.account, key.name};
    const Record* cur = current(mk);
    CARVE_RETURN_IF_ERROR(CheckMutation(m, cur));
    if (auto* put = std::get_if<Put>(&m)) {
      Record r;
      r.key = put->key;
      r.body = std::move(put->body);
      r.version = cur != nullptr ? cur->version + 1 : 1;
      r.created_ms = cur != nullptr ? cur->created_ms : now;
      r.updated_ms = now;
      out.push_back(r);
      staged[mk] = std::move(r);
    } else {
      staged[mk] = std::nullopt;
    }
  }
  for (auto& [mk, rec] : staged) {
    if (rec) {
      records_[mk] = std::move(*rec);
    } else {
      records_.erase(mk);
    }
  }
  ++successful_commits_;
  if (fail) {
    Error e = std::move(*injected_error_);
    injected_error_.reset();
    return e;
  }
  return out;
}

void FakeStore::FailNthRead(int n, Error error) {
  std::lock_guard lock(mu_);
  reads_until_failure_ = n;
  injected_read_error_ = std::move(error);
}

std::optional<Error> FakeStore::TakeReadFailureLocked() {
  if (reads_until_failure_ == 0 || --reads_until_failure_ > 0) return std::nullopt;
  return std::exchange(injected_read_error_, std::nullopt);
}

void FakeStore::FailNthCommit(int n, Error error) {
  std::lock_guard lock(mu_);
  commits_until_failure_ = n;
  injected_error_ = std::move(error);
  injected_after_write_ = false;
}

void FakeStore::LoseNthAnswer(int n, Error error) {
  std::lock_guard lock(mu_);
  commits_until_failure_ = n;
  injected_error_ = std::move(error);
  injected_after_write_ = true;
}

int FakeStore::successful_commits() const {
  std::lock_guard lock(mu_);
  return successful_commits_;
}

}  // namespace carve::store

namespace carve::store {

void FakeStore::set_max_commit_keys(size_t keys) {
  std::lock_guard lock(mu_);
  max_commit_keys_ = keys;
}

size_t FakeStore::max_commit_keys() const {
  std::lock_guard lock(mu_);
  return max_commit_keys_;
}

}  // namespace carve::store
