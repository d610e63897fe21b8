// BearerRevocations: endpoint bearer tokens (aws/bearer_token.h) revoked before they expire,
// without a restart and without revoking the key that minted them (docs/security.md, "Revoking a
// bearer token").
//
// A token is stateless: the server keeps nothing for it until it is revoked. A revocation is a
// Store record in the token's account, kind "RevokedBearerToken", named by the token's id
// (VerifiedBearer::id: SHA-256 of its signature, so neither the token nor anything that could
// rebuild it is stored), with the token's expiry. Once that expiry passes the token is refused
// anyway, so its record is dropped at a later revocation.
//
// IsRevoked is on every bearer verification and must stay cheap: it reads an in-memory set,
// after taking the Store's change feed (which carries peers' writes on etcd), so a revocation
// committed by any replica counts from the next request there. When the Store cannot be read the
// set known so far stays in force and everything is read again at the next check.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "aws/bearer_token.h"
#include "common/clock.h"
#include "common/result.h"
#include "store/store.h"

namespace carve::runtime {

inline constexpr std::string_view kRevokedBearerTokenKind = "RevokedBearerToken";

class BearerRevocations {
 public:
  // `store` and `clock` must outlive it.
  BearerRevocations(store::Store& store, const Clock& clock);
  ~BearerRevocations();
  BearerRevocations(const BearerRevocations&) = delete;
  BearerRevocations& operator=(const BearerRevocations&) = delete;

  // Revokes `token`, already verified (its signature, and that the caller may revoke it).
  // Idempotent. Drops the records of tokens that have expired since. Unavailable when the Store
  // does not take the write (nothing was revoked).
  Status Revoke(const aws::VerifiedBearer& token);

  // Whether the token with id `id` (VerifiedBearer::id) was revoked and has not expired.
  bool IsRevoked(std::string_view id);

  // Tokens revoked and not yet dropped, for tests.
  size_t size();

 private:
  // Reads what the change feed says was written since the last call. Holds mu_.
  void RefreshLocked();
  void DropExpired();

  store::Store& store_;
  const Clock& clock_;
  std::mutex mu_;
  int watcher_ = -1;
  bool reload_ = true;                    // Guarded by mu_: read every record at the next check.
  std::map<std::string, int64_t> by_id_;  // Guarded by mu_: id -> expiry, Unix ms.
};

}  // namespace carve::runtime
