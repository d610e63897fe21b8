#include "runtime/bearer_revocations.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "common/bounded_json.h"

namespace carve::runtime {
namespace {

store::Key KeyOf(const std::string& account, const std::string& id) {
  return {account, std::string(kRevokedBearerTokenKind), id};
}

// The expiry a record holds (Unix ms); 0 for a record this class did not write (edited by hand),
// which then revokes nothing.
int64_t ExpiryOf(const store::Record& r) {
  Result<nlohmann::json> j = ParseJson(r.body);
  if (!j.has_value() || !j->is_object()) return 0;
  const auto it = j->find("expires_ms");
  return it != j->end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

}  // namespace

BearerRevocations::BearerRevocations(store::Store& store, const Clock& clock)
    : store_(store), clock_(clock) {
  watcher_ = store_.Watch({std::string(kRevokedBearerTokenKind)});
}

BearerRevocations::~BearerRevocations() { store_.Unwatch(watcher_); }

void BearerRevocations::RefreshLocked() {
  store::Changes changes = store_.TakeChanges(watcher_);
  if (changes.everything || reload_) {
    auto all = store_.ListAllAccounts(std::string(kRevokedBearerTokenKind));
    if (!all.has_value()) {
      reload_ = true;  // Keep what was known; read everything at the next check.
      return;
    }
    std::map<std::string, int64_t> by_id;
    for (const auto& r : *all) by_id[r.key.name] = ExpiryOf(r);
    by_id_ = std::move(by_id);
    reload_ = false;
    return;
  }
  for (const auto& key : changes.keys) {
    auto r = store_.Get(key);
    if (r.has_value()) {
      by_id_[key.name] = ExpiryOf(*r);
    } else if (r.error().code == ErrorCode::kNotFound) {
      by_id_.erase(key.name);
    } else {
      reload_ = true;  // Unknown: read everything next time rather than guess.
    }
  }
}

bool BearerRevocations::IsRevoked(std::string_view id) {
  std::lock_guard lock(mu_);
  RefreshLocked();
  const auto it = by_id_.find(std::string(id));
  return it != by_id_.end() && it->second >= clock_.UnixMillis();
}

size_t BearerRevocations::size() {
  std::lock_guard lock(mu_);
  RefreshLocked();
  return by_id_.size();
}

Status BearerRevocations::Revoke(const aws::VerifiedBearer& token) {
  const nlohmann::json body{{"expires_ms", token.expires_at_unix_seconds * 1000},
                            {"endpoint", token.endpoint},
                            {"access_key_id", token.caller.access_key_id}};
  CARVE_RETURN_IF_ERROR(store_.Commit(
      {store::Put{KeyOf(token.caller.account_id, token.id), body.dump(), /*upsert=*/0}}));
  DropExpired();
  return OkStatus();
}

// A record outlives its token by nothing: once the token expired it is refused as expired, so
// the record only takes room. Best effort: a record another replica dropped first, or a Store
// that fails now, leaves it to the next revocation.
void BearerRevocations::DropExpired() {
  auto all = store_.ListAllAccounts(std::string(kRevokedBearerTokenKind));
  if (!all.has_value()) return;
  const int64_t now = clock_.UnixMillis();
  for (const auto& r : *all) {
    if (ExpiryOf(r) >= now) continue;
    if (auto done = store_.Commit({store::Remove{r.key, r.version}}); !done.has_value()) {
      spdlog::debug("bearer revocations: {} not dropped yet: {}", r.key.name, done.error().message);
    }
  }
}

}  // namespace carve::runtime
