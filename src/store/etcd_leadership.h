// EtcdLeadership: which carve server replica leads, elected through an etcd lease, with the
// fence that refuses a deposed leader's writes (docs/ha.md).
//
// Each replica holds a lease of `ttl` and keeps it alive every ttl/3. It registers itself at
// PREFIX/_ha/replicas/IDENTITY under that lease (so the list of replicas is the list of live ones),
// and campaigns by creating PREFIX/_ha/leader under the lease only if the key is absent. The one
// that creates it leads; the key's create_revision is its fence (EtcdStore::SetFence), so from
// then on its store's every commit requires that key to be unchanged.
//
// A leader that cannot renew its lease for `ttl` (a partition, or it was paused: GC, SIGSTOP)
// has lost: etcd deletes the key when the lease expires and another replica creates it anew,
// so the old leader's writes fail on the fence whether or not it has noticed yet. When its
// keep-alive finds the lease gone, `on_lost` runs once (the server exits there, and its
// supervisor starts it again as a standby; Kubernetes' controllers do the same). A renewal
// that merely fails (etcd unreachable, or electing its own leader, after which etcd extends
// every lease) decides nothing: the fence already makes a deposed leader harmless, so it does
// not step down on a guess. Kubernetes does not fence its controllers' writes; this does.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd_store.h"

namespace carve::store {

struct LeadershipOptions {
  std::string identity;         // This replica as the others name it: its URL.
  std::string details = "{}";   // JSON kept in the replica's registration.
  std::chrono::seconds ttl{5};  // How long a silent leader keeps leading.
};

// A replica as registered under PREFIX/_ha/replicas/.
struct ReplicaInfo {
  std::string identity;
  std::string details;  // JSON.
};

class EtcdLeadership {
 public:
  EtcdLeadership(EtcdStore& store, LeadershipOptions options);
  // Stops the keep-alive and revokes the lease: a leader that stops hands over at once.
  ~EtcdLeadership();
  EtcdLeadership(const EtcdLeadership&) = delete;
  EtcdLeadership& operator=(const EtcdLeadership&) = delete;

  // Registers this replica and campaigns until it leads (OK), `keep_trying` returns false
  // (FailedPrecondition), or etcd cannot be reached for longer than the TTL (Unavailable).
  // On success the store is fenced and `on_lost` is armed.
  Status Campaign(const std::function<bool()>& keep_trying, std::function<void()> on_lost);

  bool leading() const { return leading_.load(); }
  int64_t lease() const { return lease_.load(); }
  // The leader's identity ("" when none leads), and every live replica.
  Result<std::string> Leader();
  Result<std::vector<ReplicaInfo>> Replicas();

  std::string leader_key() const { return store_.prefix() + "/_ha/leader"; }
  std::string replica_key() const { return store_.prefix() + "/_ha/replicas/" + options_.identity; }

 private:
  Status Register();
  void KeepAliveLoop();
  void Lose(const std::string& why);

  EtcdStore& store_;
  const LeadershipOptions options_;
  std::atomic<int64_t> lease_{0};
  std::atomic<bool> leading_{false};
  std::atomic<bool> lost_{false};

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;          // Guarded by mu_.
  std::function<void()> on_lost_;  // Guarded by mu_.
  std::thread keep_alive_;
};

}  // namespace carve::store
