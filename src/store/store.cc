#include "store/store.h"

#include <string_view>
#include <utility>

#include "store/store_rules.h"

namespace carve::store {

Result<std::vector<Record>> Store::Commit(std::vector<Mutation> mutations) {
  std::vector<Key> keys;
  keys.reserve(mutations.size());
  for (const Mutation& m : mutations) keys.push_back(MutationKey(m));
  CARVE_ASSIGN_OR_RETURN(auto written, Apply(std::move(mutations)));
  NoteChanged(keys);
  return written;
}

int Store::Watch(std::set<std::string> kinds) {
  std::lock_guard lock(feed_mu_);
  const int id = next_watcher_++;
  watchers_[id] = Watcher{std::move(kinds), Changes{{}, true}};
  return id;
}

Changes Store::TakeChanges(int watcher) {
  std::lock_guard lock(feed_mu_);
  auto it = watchers_.find(watcher);
  if (it == watchers_.end()) return Changes{{}, true};
  return std::exchange(it->second.pending, Changes{});
}

void Store::Unwatch(int watcher) {
  std::lock_guard lock(feed_mu_);
  watchers_.erase(watcher);
}

void Store::NoteChanged(const std::vector<Key>& keys) {
  std::lock_guard lock(feed_mu_);
  for (auto& [id, w] : watchers_) {
    if (w.pending.everything) continue;
    for (const Key& k : keys) {
      if (w.kinds.contains(k.kind)) w.pending.keys.insert(k);
    }
    if (w.pending.keys.size() > kMaxPendingChanges) w.pending = Changes{{}, true};
  }
}

void Store::NoteEverything() {
  std::lock_guard lock(feed_mu_);
  for (auto& [id, w] : watchers_) w.pending = Changes{{}, true};
}

Result<Record> Store::Create(Key key, std::string body) {
  std::vector<Mutation> m;
  m.emplace_back(Put{std::move(key), std::move(body), std::nullopt});
  CARVE_ASSIGN_OR_RETURN(auto written, Commit(std::move(m)));
  if (written.size() != 1) return Internal("Create: Commit returned no record");
  return std::move(written.front());
}

Result<Record> Store::Update(Key key, std::string body, int64_t expected_version) {
  std::vector<Mutation> m;
  m.emplace_back(Put{std::move(key), std::move(body), expected_version});
  CARVE_ASSIGN_OR_RETURN(auto written, Commit(std::move(m)));
  if (written.size() != 1) return Internal("Update: Commit returned no record");
  return std::move(written.front());
}

Status Store::Delete(Key key) {
  std::vector<Mutation> m;
  m.emplace_back(Remove{std::move(key), std::nullopt});
  CARVE_RETURN_IF_ERROR(Commit(std::move(m)));
  return OkStatus();
}

Status ValidateKey(const Key& key) {
  struct Part {
    std::string_view field;
    const std::string& value;
  };
  for (const Part& p :
       {Part{"account", key.account}, Part{"kind", key.kind}, Part{"name", key.name}}) {
    if (p.value.size() > kMaxKeyPartBytes) {
      return InvalidArgument("store key " + std::string(p.field) + " is " +
                             std::to_string(p.value.size()) + " bytes; the limit is " +
                             std::to_string(kMaxKeyPartBytes));
    }
    if (p.value.find('\0') != std::string::npos) {
      return InvalidArgument("store key " + std::string(p.field) + " contains a NUL byte");
    }
  }
  if (key.kind.empty()) return InvalidArgument("store key kind must not be empty");
  if (key.name.empty()) {
    return InvalidArgument("store key name must not be empty (kind " + key.kind + ")");
  }
  return OkStatus();
}

std::string DescribeKey(const Key& key) {
  return key.kind + " '" + key.name + "' (" +
         (key.account.empty() ? std::string("fleet-global") : "account " + key.account) + ")";
}

Error AlreadyExistsError(const Key& key, int64_t current_version) {
  return AlreadyExists(DescribeKey(key) + " already exists at version " +
                       std::to_string(current_version));
}

Error NotFoundError(const Key& key) { return NotFound(DescribeKey(key) + " does not exist"); }

Error VersionConflictError(const Key& key, int64_t expected_version, int64_t current_version) {
  return FailedPrecondition(DescribeKey(key) + " is at version " + std::to_string(current_version) +
                            ", not the expected version " + std::to_string(expected_version) +
                            " (someone else wrote first)");
}

Status CheckMutation(const Mutation& mutation, const Record* current) {
  const Key& key = MutationKey(mutation);
  std::optional<int64_t> expected;
  if (const auto* put = std::get_if<Put>(&mutation)) {
    if (!put->expected_version.has_value()) {
      if (current != nullptr) return AlreadyExistsError(key, current->version);
      return OkStatus();
    }
    if (*put->expected_version == 0) return OkStatus();  // Upsert.
    expected = put->expected_version;
  } else {
    expected = std::get<Remove>(mutation).expected_version;
  }
  if (current == nullptr) return NotFoundError(key);
  if (expected.has_value() && *expected != current->version) {
    return VersionConflictError(key, *expected, current->version);
  }
  return OkStatus();
}

const Key& MutationKey(const Mutation& mutation) {
  return std::visit([](const auto& m) -> const Key& { return m.key; }, mutation);
}

}  // namespace carve::store
