#include "store/etcd_leadership.h"

#include <spdlog/spdlog.h>

#include "common/base64.h"
#include "store/etcd_json.h"

namespace carve::store {

namespace {

using json = nlohmann::json;

// How often a standby asks whether the leader key is free: a takeover waits for the old lease
// to expire (the TTL) and then at most this long.
constexpr std::chrono::milliseconds kCampaignPoll{250};

}  // namespace

EtcdLeadership::EtcdLeadership(EtcdStore& store, LeadershipOptions options)
    : store_(store), options_(std::move(options)) {}

EtcdLeadership::~EtcdLeadership() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (keep_alive_.joinable()) keep_alive_.join();
  // Revoking deletes the leader key and the registration at once: a standby takes over
  // without waiting out the TTL.
  if (lease_ != 0) (void)store_.client().LeaseRevoke(lease_);
}

Status EtcdLeadership::Register() {
  if (keep_alive_.joinable()) keep_alive_.join();  // A lost lease's thread has ended.
  CARVE_ASSIGN_OR_RETURN(int64_t lease, store_.client().LeaseGrant(options_.ttl));
  lease_ = lease;
  lost_ = false;
  EtcdReply put = store_.client().Call("kv/put",
                                       json{{"key", Base64Encode(replica_key())},
                                            {"value", Base64Encode(options_.details)},
                                            {"lease", std::to_string(lease)}},
                                       EtcdCall::kWrite);
  // An unknown outcome is fine: the put is idempotent and the next campaign round repeats it.
  if (!put.body.has_value() && !put.outcome_unknown) return put.body.error();
  keep_alive_ = std::thread([this] { KeepAliveLoop(); });
  return OkStatus();
}

Status EtcdLeadership::Campaign(const std::function<bool()>& keep_trying,
                                std::function<void()> on_lost) {
  const std::string key = leader_key();
  bool said_standby = false;
  while (true) {
    if (lease_ == 0 || lost_) {
      if (Status registered = Register(); !registered.ok()) {
        spdlog::warn("leadership: cannot register {}: {}", options_.identity,
                     registered.error().message);
      }
    }
    if (lease_ != 0 && !lost_) {
      const json txn = {{"compare",
                         {{{"key", Base64Encode(key)},
                           {"target", "CREATE"},
                           {"result", "EQUAL"},
                           {"create_revision", "0"}}}},
                        {"success",
                         {{{"request_put",
                            {{"key", Base64Encode(key)},
                             {"value", Base64Encode(options_.identity)},
                             {"lease", std::to_string(lease_.load())}}}}}},
                        {"failure", {{{"request_range", {{"key", Base64Encode(key)}}}}}}};
      EtcdReply reply = store_.client().Call("kv/txn", txn, EtcdCall::kWrite);
      if (reply.body.has_value()) {
        int64_t won_at = 0;
        if (reply.body->value("succeeded", false)) {
          won_at = JsonInt(reply.body->value("header", json::object()), "revision");
        } else {
          const json responses = reply.body->value("responses", json::array());
          const json kvs = responses.empty() ? json::array()
                                             : responses[0]
                                                   .value("response_range", json::object())
                                                   .value("kvs", json::array());
          if (!kvs.empty()) {
            // Ours already, when an earlier round's answer was lost.
            if (JsonInt(kvs[0], "lease") == lease_) won_at = JsonInt(kvs[0], "create_revision");
            if (won_at == 0 && !said_standby) {
              spdlog::info("leadership: {} leads; {} waits as a standby",
                           JsonBytes(kvs[0], "value").value_or("?"), options_.identity);
              said_standby = true;
            }
          }
        }
        if (won_at != 0) {
          {
            std::lock_guard lock(mu_);
            on_lost_ = std::move(on_lost);
          }
          store_.SetFence({key, won_at});
          leading_ = true;
          spdlog::info("leadership: {} leads (fence revision {}, lease TTL {} s)",
                       options_.identity, won_at, options_.ttl.count());
          return OkStatus();
        }
      } else if (!reply.outcome_unknown) {
        spdlog::warn("leadership: campaign of {}: {}", options_.identity,
                     reply.body.error().message);
      }
    }
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, kCampaignPoll, [&] { return stopping_; });
    if (stopping_) return FailedPrecondition("leadership: stopped before it led");
    lock.unlock();
    if (!keep_trying()) return FailedPrecondition("leadership: stopped before it led");
  }
}

void EtcdLeadership::KeepAliveLoop() {
  const auto interval = std::chrono::duration_cast<std::chrono::milliseconds>(options_.ttl) / 3;
  bool failing = false;
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (wake_.wait_for(lock, interval, [&] { return stopping_; })) return;
    }
    auto renewed = store_.client().LeaseKeepAlive(lease_);
    if (renewed.has_value()) {
      if (failing) spdlog::info("leadership: {} renews its lease again", options_.identity);
      failing = false;
      continue;
    }
    if (renewed.error().code == ErrorCode::kNotFound) {
      Lose("its lease expired (" + renewed.error().message + ")");
      return;
    }
    // etcd unreachable, or electing a leader of its own (it extends every lease when one is
    // elected). Nothing to decide yet: while the lease lives the key is this replica's, and
    // once it is gone the fence refuses its writes whatever this thread believes.
    if (!failing) {
      spdlog::warn("leadership: {} cannot renew its lease: {}", options_.identity,
                   renewed.error().message);
    }
    failing = true;
  }
}

void EtcdLeadership::Lose(const std::string& why) {
  lost_ = true;
  const bool was_leading = leading_.exchange(false);
  std::function<void()> on_lost;
  {
    std::lock_guard lock(mu_);
    on_lost = std::exchange(on_lost_, nullptr);
  }
  if (was_leading) {
    spdlog::error("leadership: {} is no longer the leader: {}", options_.identity, why);
    if (on_lost) on_lost();
  }
}

Result<std::string> EtcdLeadership::Leader() {
  CARVE_ASSIGN_OR_RETURN(
      json reply, store_.client().Read("kv/range", json{{"key", Base64Encode(leader_key())}}));
  const json kvs = reply.value("kvs", json::array());
  if (kvs.empty()) return std::string();
  return JsonBytes(kvs[0], "value").value_or("");
}

Result<std::vector<ReplicaInfo>> EtcdLeadership::Replicas() {
  const std::string base = store_.prefix() + "/_ha/replicas/";
  CARVE_ASSIGN_OR_RETURN(
      json reply,
      store_.client().Read("kv/range", json{{"key", Base64Encode(base)},
                                            {"range_end", Base64Encode(PrefixEnd(base))}}));
  std::vector<ReplicaInfo> out;
  for (const json& kv : reply.value("kvs", json::array())) {
    const std::string key = JsonBytes(kv, "key").value_or("");
    if (key.size() <= base.size()) continue;
    out.push_back({key.substr(base.size()), JsonBytes(kv, "value").value_or("{}")});
  }
  return out;
}

}  // namespace carve::store
