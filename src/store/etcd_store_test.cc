// EtcdStore beyond the shared contract (store_contract_test.cc): what only a replicated store
// has. Peers' writes reach the change feed and the watch cache, a compaction past the watch makes
// watchers re-list (and the cache list again),
// a commit whose answer was lost lands exactly once, and etcd's limits are refused up front.
#include "store/etcd_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "common/base64.h"
#include "store/etcd_json.h"
#include "store/store_test_env.h"

namespace carve::store {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// Polls `store`'s feed until `want` holds for what accumulated, or 10 s pass.
bool AwaitChanges(Store& store, int watcher, const std::function<bool(const Changes&)>& want) {
  Changes seen;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    Changes c = store.TakeChanges(watcher);
    seen.everything = seen.everything || c.everything;
    seen.keys.insert(c.keys.begin(), c.keys.end());
    if (want(seen)) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TEST(EtcdStore, AnotherWritersCommitsReachTheChangeFeed) {
  const std::string prefix = UniqueEtcdPrefix();
  auto a = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, prefix);
  auto b = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, prefix);
  const int watcher = a->Watch({"Endpoint"});
  (void)a->TakeChanges(watcher);
  ASSERT_TRUE(b->Create(K("Endpoint", "from-b"), "{}").has_value());
  ASSERT_TRUE(b->Create(K("Model", "unwatched"), "{}").has_value());
  ASSERT_TRUE(b->Delete(K("Endpoint", "from-b")).ok());
  ASSERT_TRUE(b->Create(K("Endpoint", "second"), "{}").has_value());
  EXPECT_TRUE(AwaitChanges(*a, watcher, [](const Changes& c) {
    return c.keys == std::set<Key>{K("Endpoint", "from-b"), K("Endpoint", "second")};
  }));
  // And the other store reads what b wrote at once: reads are linearizable.
  EXPECT_EQ(a->Get(K("Endpoint", "second"))->version, 1);
}

// A standby's store: a peer's every write is read back at once, from the cache. Reads never
// went to etcd for the records, and turning cached reads off (a replica that starts to lead)
// sends them there.
TEST(EtcdStore, ACachedStoreReadsAPeersWritesAtOnceFromItsCache) {
  const std::string prefix = UniqueEtcdPrefix();
  auto writer = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, prefix);
  ASSERT_TRUE(writer->Create(K("Model", "before-open"), "{\"n\":0}").has_value());
  auto reader = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, prefix, true, 10s);
  EXPECT_EQ(reader->cached_records(), 1u);  // Listed when it opened.
  int reads = 0;
  for (int i = 0; i < 30; ++i) {
    const std::string name = fmt::format("m{:02}", i);
    ASSERT_TRUE(writer->Create(K("Model", name), "{}").has_value());
    auto got = reader->Get(K("Model", name));
    ASSERT_TRUE(got.has_value()) << name << ": " << got.error().message;
    ASSERT_TRUE(writer->Update(K("Model", name), "{\"v\":2}", 1).has_value());
    EXPECT_EQ(reader->Get(K("Model", name))->body, "{\"v\":2}");
    if (i % 2 == 1) {
      ASSERT_TRUE(writer->Delete(K("Model", name)).ok());
      EXPECT_EQ(reader->Get(K("Model", name)).error().code, ErrorCode::kNotFound) << name;
    }
    reads += 2 + (i % 2);
  }
  ASSERT_TRUE(writer->Create(K("Model", "other-account", "222222222222"), "{}").has_value());
  auto listed =
      reader->List("111111111111", "Model", {.name_prefix = "m", .after_name = "", .limit = 4});
  ASSERT_TRUE(listed.has_value());
  std::vector<std::string> names;
  for (const Record& r : *listed) names.push_back(r.key.name);
  EXPECT_EQ(names, (std::vector<std::string>{"m00", "m02", "m04", "m06"}));
  auto all = reader->ListAllAccounts("Model");
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->size(), 17u);  // before-open, 15 left of m00..m29, other-account.
  EXPECT_EQ(all->back().key.account, "222222222222");
  reads += 2;
  EXPECT_EQ(reader->cache_hits(), reads);
  EXPECT_EQ(reader->cache_fallbacks(), 0);

  reader->SetCachedReads(false);
  ASSERT_TRUE(reader->Get(K("Model", "m00")).has_value());
  EXPECT_EQ(reader->cache_hits(), reads);
}

// Another user of the etcd cluster writes outside carve's prefix: etcd's revision moves on but
// no event reaches the cache. The read does not wait forever or answer stale: after cache_wait
// it goes to etcd.
TEST(EtcdStore, AWriteOutsideThePrefixSendsACachedReadToEtcd) {
  const std::string prefix = UniqueEtcdPrefix();
  auto reader = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, prefix, true, 1s);
  auto writer = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, prefix);
  ASSERT_TRUE(writer->Create(K("Model", "m"), "{}").has_value());
  ASSERT_TRUE(reader->Get(K("Model", "m")).has_value());
  EXPECT_EQ(reader->cache_fallbacks(), 0);
  auto put = writer->client().Call(
      "kv/put", {{"key", Base64Encode(prefix + "-elsewhere/x")}, {"value", Base64Encode("1")}},
      EtcdCall::kWrite);
  ASSERT_TRUE(put.body.has_value()) << put.body.error().message;
  auto got = reader->Get(K("Model", "m"));
  ASSERT_TRUE(got.has_value()) << got.error().message;
  EXPECT_EQ(reader->cache_fallbacks(), 1);
}

// The messages etcd sends a cache's watch when writes land between the cache's listing (at
// revision 10) and the watch's creation: the creation's answer, whose header is already at 12,
// then the events of 11 and 12. Until those events arrive the cache is at 10, so a read that
// waits for etcd's revision 12 waits (and after cache_wait asks etcd) rather than answer from a
// cache without them. A real watch shows this order only when a write wins that race, which
// made the bug a 3-in-11 failure; replayed, it fails every run.
TEST(EtcdStore, ACacheDoesNotTakeTheWatchsCreationAsCaughtUp) {
  const std::string prefix = "/carve-race";
  auto put = [&](int64_t revision, const std::string& name, const std::string& body) {
    const std::string value = fmt::format("carve1 1 {0} {0} c{0}\n{1}", revision, body);
    return json{{"kv",
                 {{"key", Base64Encode(prefix + "/Model/111111111111/" + name)},
                  {"value", Base64Encode(value)},
                  {"mod_revision", std::to_string(revision)}}}};
  };
  RecordCache cache;
  cache.Reset({}, 10);
  FeedWatchResponse(cache, prefix,
                    {{"header", {{"revision", "12"}}}, {"created", true}, {"watch_id", "1"}});
  EXPECT_EQ(cache.revision(), 10);
  EXPECT_FALSE(cache.AwaitRevision(12, 0ms));
  EXPECT_FALSE(ProgressRevision({{"header", {{"revision", "12"}}}, {"created", true}}));

  // A reader already waiting for 12 is let go by the events, and sees both writes.
  std::optional<Record> seen;
  std::thread reader([&] {
    if (cache.AwaitRevision(12, 10s)) seen = cache.Get(K("Model", "b"));
  });
  FeedWatchResponse(cache, prefix,
                    {{"header", {{"revision", "12"}}}, {"events", {put(11, "a", "{}")}}});
  EXPECT_EQ(cache.revision(), 11);
  FeedWatchResponse(cache, prefix,
                    {{"header", {{"revision", "12"}}}, {"events", {put(12, "b", "{\"n\":2}")}}});
  reader.join();
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->body, "{\"n\":2}");
  EXPECT_EQ(cache.size(), 2u);

  // A progress notification does vouch for its revision: nothing changed up to 15.
  const json progress = {{"header", {{"revision", "15"}}}};
  EXPECT_EQ(ProgressRevision(progress), 15);
  FeedWatchResponse(cache, prefix, progress);
  EXPECT_EQ(cache.revision(), 15);
}

// A store's own commit reaches its watchers once, when it is committed; the watch's echo of it
// is skipped. Deterministic: a cached read waits until the watch has delivered etcd's current
// revision, and the watch notes a response's changes before its cache takes it, so after that
// read an echo would already be in the feed. (The contract suite's "taken once" check ran
// before the echo arrived, so it caught this bug only now and then.)
TEST(EtcdStore, AnOwnCommitIsNotedOnceEvenAfterTheWatchDeliveredIt) {
  auto store = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, UniqueEtcdPrefix(), true, 10s);
  const int watcher = store->Watch({"Endpoint"});
  (void)store->TakeChanges(watcher);
  ASSERT_TRUE(store->Create(K("Endpoint", "e1"), "{}").has_value());
  ASSERT_TRUE(store->Update(K("Endpoint", "e1"), "{\"v\":2}", 1).has_value());
  EXPECT_EQ(store->TakeChanges(watcher).keys, (std::set<Key>{K("Endpoint", "e1")}));
  ASSERT_EQ(store->Get(K("Endpoint", "e1"))->version, 2);  // From the cache, caught up.
  EXPECT_EQ(store->cache_fallbacks(), 0);
  EXPECT_TRUE(store->TakeChanges(watcher).keys.empty());
}

// A server replica's store writes only once it leads: before its fence is set, a Commit is
// refused and nothing reaches etcd.
TEST(EtcdStore, AStoreThatRequiresAFenceWritesNothingWithoutOne) {
  const std::string prefix = UniqueEtcdPrefix();
  EtcdClientOptions client;
  client.endpoints = SharedEtcd().endpoints();
  auto standby = EtcdStore::Open(std::make_unique<EtcdClient>(client),
                                 {.prefix = prefix, .require_fence = true});
  ASSERT_TRUE(standby.has_value()) << standby.error().message;
  auto refused = (*standby)->Create(K("Model", "m"), "{}");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("does not lead"), std::string::npos)
      << refused.error().message;
  auto other = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, prefix);
  EXPECT_EQ(other->Get(K("Model", "m")).error().code, ErrorCode::kNotFound);
}

// The watching store's member goes away; meanwhile another member takes writes and compacts
// them away. When the watch comes back it cannot resume, so every watcher re-lists.
TEST(EtcdStore, ACompactionPastTheWatchMakesWatchersReList) {
  TempDir dir;
  EtcdCluster etcd(dir.path(), 3);
  auto watching = OpenEtcdStore({etcd.endpoint(0)}, nullptr, "/c", /*cache_reads=*/true, 10s);
  auto writer = OpenEtcdStore({etcd.endpoint(1)}, nullptr, "/c");
  const int watcher = watching->Watch({"Model"});
  (void)watching->TakeChanges(watcher);
  ASSERT_TRUE(writer->Create(K("Model", "before"), "{}").has_value());
  ASSERT_TRUE(AwaitChanges(*watching, watcher,
                           [](const Changes& c) { return c.keys.contains(K("Model", "before")); }));
  etcd.Kill(0);
  for (int i = 0; i < 5; ++i) {
    auto r = writer->Create(K("Model", "while-away-" + std::to_string(i)), "{}");
    ASSERT_TRUE(r.has_value()) << r.error().message;
  }
  auto head =
      writer->client().Read("kv/range", {{"key", Base64Encode("/c/")}, {"count_only", true}});
  ASSERT_TRUE(head.has_value());
  const int64_t revision = JsonInt(head->at("header"), "revision");
  auto compacted = writer->client().Call(
      "kv/compaction", {{"revision", std::to_string(revision)}, {"physical", true}},
      EtcdCall::kWrite);
  ASSERT_TRUE(compacted.body.has_value()) << compacted.body.error().message;
  ASSERT_TRUE(etcd.Restart(0));
  EXPECT_TRUE(AwaitChanges(*watching, watcher, [](const Changes& c) { return c.everything; }));
  // Its cache was listed again: the writes it never saw as events are there.
  EXPECT_EQ(watching->cached_records(), 6u);
  EXPECT_EQ(watching->List("111111111111", "Model", {})->size(), 6u);
  EXPECT_EQ(watching->cache_fallbacks(), 0);
}

// etcd's space quota runs out and it raises its NOSPACE alarm: the commit is Unavailable (503
// to API callers), saying so and what to do; the write acknowledged before it is still there;
// and once the operator compacts, defragments and disarms the alarm (docs/ha.md), commits
// succeed again.
TEST(EtcdStore, AFullSpaceQuotaIsUnavailableLosesNothingAndRecoversWhenDisarmed) {
  TempDir dir;
  EtcdCluster etcd(dir.path(), 1, nullptr, {"--quota-backend-bytes=4194304"});
  auto store = OpenEtcdStore(etcd.endpoints(), nullptr, "/q");
  ASSERT_NE(store, nullptr);
  const Key key = K("Model", "big");
  ASSERT_TRUE(store->Create(key, "{}").has_value());
  // Every update keeps the old revision until a compaction: 64 KiB at a time fills 4 MiB.
  int64_t acked = 1;
  std::optional<Error> refused;
  for (int i = 0; i < 400 && !refused; ++i) {
    auto r = store->Update(key, fmt::format("\"{}\"", std::string(64 * 1024, 'a' + i % 26)), acked);
    if (r.has_value()) {
      acked = r->version;
    } else {
      refused = r.error();
    }
  }
  ASSERT_TRUE(refused.has_value()) << "4 MiB of updates never filled the quota";
  EXPECT_EQ(refused->code, ErrorCode::kUnavailable) << refused->message;
  EXPECT_NE(refused->message.find("NOSPACE"), std::string::npos) << refused->message;
  auto kept = store->Get(key);
  ASSERT_TRUE(kept.has_value()) << kept.error().message;
  EXPECT_EQ(kept->version, acked);

  auto head =
      store->client().Read("kv/range", {{"key", Base64Encode("/q/")}, {"count_only", true}});
  ASSERT_TRUE(head.has_value());
  EtcdClient& c = store->client();
  ASSERT_TRUE(c.Call("kv/compaction",
                     {{"revision", std::to_string(JsonInt(head->at("header"), "revision"))},
                      {"physical", true}},
                     EtcdCall::kWrite)
                  .body.has_value());
  ASSERT_TRUE(c.Call("maintenance/defragment", json::object(), EtcdCall::kWrite).body.has_value());
  auto alarms = c.Call("maintenance/alarm", {{"action", "GET"}}, EtcdCall::kRead).body;
  ASSERT_TRUE(alarms.has_value());
  ASSERT_FALSE(alarms->value("alarms", json::array()).empty()) << alarms->dump();
  for (const json& alarm : alarms->at("alarms")) {
    auto disarmed = c.Call("maintenance/alarm",
                           {{"action", "DEACTIVATE"},
                            {"memberID", alarm.value("memberID", "0")},
                            {"alarm", "NOSPACE"}},
                           EtcdCall::kWrite);
    ASSERT_TRUE(disarmed.body.has_value()) << disarmed.body.error().message;
  }
  auto again = store->Update(key, "{\"after\":\"disarm\"}", acked);
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(again->version, acked + 1);
}

// A member in front of a real one that passes every request on, except that it can lose the
// answer to the next write (it was applied) or lose the write itself (it was not): either way
// the client times out and cannot know which.
class LossyMember {
 public:
  explicit LossyMember(std::string target) : upstream_("http://" + target) {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      const bool write =
          req.path == "/v3/kv/txn" && req.body.find("request_put") != std::string::npos;
      Loss loss = write ? loss_.exchange(Loss::kNone) : Loss::kNone;
      if (loss != Loss::kLoseRequest) {
        auto r = upstream_.Post(req.path, req.body, "application/json");
        if (r) res.set_content(r->body, "application/json");
        if (r) res.status = r->status;
      }
      if (loss == Loss::kAppliedThenNoSpace) {
        // What quotaApplierV3 answers for the write that crossed the quota: applied, and
        // refused. The gateway maps ResourceExhausted to 429.
        res.status = 429;
        res.set_content(R"({"error":"etcdserver: mvcc: database space exceeded",)"
                        R"("message":"etcdserver: mvcc: database space exceeded","code":8})",
                        "application/json");
        return;
      }
      if (loss != Loss::kNone) std::this_thread::sleep_for(700ms);  // Past the client's timeout.
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~LossyMember() {
    server_.stop();
    thread_.join();
  }
  enum class Loss { kNone, kLoseAnswer, kLoseRequest, kAppliedThenNoSpace };
  void LoseNextWrite(Loss loss) { loss_ = loss; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Client upstream_;
  httplib::Server server_;
  std::atomic<Loss> loss_{Loss::kNone};
  int port_ = 0;
  std::thread thread_;
};

std::unique_ptr<EtcdStore> StoreThrough(const LossyMember& member, const std::string& prefix) {
  auto client = std::make_unique<EtcdClient>(
      EtcdClientOptions{.endpoints = {member.endpoint()}, .request_timeout = 400ms});
  auto store = EtcdStore::Open(std::move(client), {.prefix = prefix, .watch = false});
  EXPECT_TRUE(store.has_value());
  return store ? std::move(store).value() : nullptr;
}

TEST(EtcdStore, ACommitWhoseAnswerWasLostIsFoundLandedNotAppliedTwice) {
  LossyMember member(SharedEtcd().endpoint(0));
  auto store = StoreThrough(member, UniqueEtcdPrefix());
  member.LoseNextWrite(LossyMember::Loss::kLoseAnswer);
  auto created = store->Create(K("Model", "once"), "{}");
  // Not AlreadyExists (its own write), not Unavailable: it landed, and the store found out.
  ASSERT_TRUE(created.has_value()) << created.error().message;
  EXPECT_EQ(created->version, 1);
  EXPECT_EQ(store->unknown_outcomes_resolved(), 1);
  EXPECT_EQ(store->Get(K("Model", "once"))->version, 1);
}

TEST(EtcdStore, ACommitThatWasLostIsSentAgainOnce) {
  LossyMember member(SharedEtcd().endpoint(0));
  auto store = StoreThrough(member, UniqueEtcdPrefix());
  ASSERT_TRUE(store->Create(K("Model", "m"), "v1").has_value());
  member.LoseNextWrite(LossyMember::Loss::kLoseRequest);
  auto updated = store->Update(K("Model", "m"), "v2", 1);
  ASSERT_TRUE(updated.has_value()) << updated.error().message;
  EXPECT_EQ(updated->version, 2);
  EXPECT_EQ(store->unknown_outcomes_resolved(), 0);
  auto got = store->Get(K("Model", "m"));
  EXPECT_EQ(got->version, 2);
  EXPECT_EQ(got->body, "v2");
}

// The front check refuses writes once the alarm is up, before they are proposed (the test
// above); a write that raced past it is applied and answered NOSPACE all the same.
TEST(EtcdStore, AWriteAppliedAndAnsweredNoSpaceIsFoundLandedNotReportedUnwritten) {
  LossyMember member(SharedEtcd().endpoint(0));
  auto store = StoreThrough(member, UniqueEtcdPrefix());
  member.LoseNextWrite(LossyMember::Loss::kAppliedThenNoSpace);
  auto created = store->Create(K("Model", "crossed"), "{}");
  ASSERT_TRUE(created.has_value()) << created.error().message;
  EXPECT_EQ(created->version, 1);
  EXPECT_EQ(store->unknown_outcomes_resolved(), 1);
  EXPECT_EQ(store->Get(K("Model", "crossed"))->version, 1);
}

TEST(EtcdStore, TwoStoresIncrementingOneRecordLoseNoIncrement) {
  const std::string prefix = UniqueEtcdPrefix();
  auto a = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, prefix);
  auto b = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, prefix);
  ASSERT_TRUE(a->Create(K("Queue", "counter"), "0").has_value());
  constexpr int kThreads = 4, kEach = 25;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Store& s = t % 2 == 0 ? static_cast<Store&>(*a) : static_cast<Store&>(*b);
      for (int i = 0; i < kEach;) {
        auto cur = s.Get(K("Queue", "counter"));
        if (!cur.has_value()) {
          ++errors;
          return;
        }
        auto next =
            s.Update(K("Queue", "counter"), std::to_string(std::stoi(cur->body) + 1), cur->version);
        if (next.has_value()) {
          ++i;
        } else if (next.error().code != ErrorCode::kFailedPrecondition) {
          ++errors;
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  auto final = a->Get(K("Queue", "counter"));
  EXPECT_EQ(final->body, std::to_string(kThreads * kEach));
  EXPECT_EQ(final->version, kThreads * kEach + 1);
}

TEST(EtcdStore, ACommitOverEtcdsTransactionLimitsIsRefusedBeforeAnythingIsSent) {
  auto store = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, UniqueEtcdPrefix());
  std::vector<Mutation> many;
  for (int i = 0; i < 129; ++i) {
    many.push_back(Put{K("Model", "m" + std::to_string(i)), "{}", std::nullopt});
  }
  auto r = store->Commit(std::move(many));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("129 records is more than the 128"), std::string::npos)
      << r.error().message;
  auto big = store->Create(K("Model", "big"), std::string(size_t{1600} * 1024, 'x'));
  ASSERT_FALSE(big.has_value());
  EXPECT_EQ(big.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(big.error().message.find("--max-request-bytes"), std::string::npos);
  EXPECT_TRUE(store->List("111111111111", "Model", {})->empty());
}

TEST(EtcdStore, KeysWhoseKindOrAccountHoldsTheSeparatorAreRefused) {
  auto store = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, UniqueEtcdPrefix());
  EXPECT_EQ(store->Create(K("Mo/del", "m"), "{}").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(store->Create(K("Model", "m", "1/2"), "{}").error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(store->Create(K("Model", "a/b"), "{}").has_value());  // Names may hold '/'.
  EXPECT_EQ(store->List("111111111111", "Model", {})->front().key.name, "a/b");
}

TEST(EtcdStore, AValueCarveDidNotWriteIsAnErrorNamingTheRecord) {
  const std::string prefix = UniqueEtcdPrefix();
  auto store = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, prefix);
  auto put = store->client().Call(
      "kv/put",
      {{"key", Base64Encode(prefix + "/Model/111111111111/alien")}, {"value", Base64Encode("{}")}},
      EtcdCall::kWrite);
  ASSERT_TRUE(put.body.has_value());
  auto got = store->Get(K("Model", "alien"));
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code, ErrorCode::kInternal);
  EXPECT_NE(got.error().message.find("Model 'alien'"), std::string::npos) << got.error().message;
}

TEST(EtcdStore, ListsLongerThanAPageComeWhole) {
  auto store = OpenEtcdStore(SharedEtcd().endpoints(), nullptr, UniqueEtcdPrefix());
  for (int i = 0; i < 1100; i += 100) {
    std::vector<Mutation> some;
    for (int j = i; j < std::min(i + 100, 1100); ++j) {
      some.push_back(Put{K("Node", fmt::format("n{:05}", j), ""), "{}", std::nullopt});
    }
    ASSERT_TRUE(store->Commit(std::move(some)).has_value());
  }
  auto all = store->ListAllAccounts("Node");
  ASSERT_EQ(all->size(), 1100u);
  EXPECT_EQ(all->back().key.name, "n01099");
  auto limited = store->List("", "Node", {"", "n00999", 150});
  ASSERT_EQ(limited->size(), 100u);
  EXPECT_EQ(limited->front().key.name, "n01000");
}

}  // namespace
}  // namespace carve::store
