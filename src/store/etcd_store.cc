#include "store/etcd_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <random>

#include "common/base64.h"
#include "store/etcd_json.h"
#include "store/store_rules.h"

namespace carve::store {

namespace {

using json = nlohmann::json;

constexpr std::string_view kValueTag = "carve1";
constexpr int kListPage = 1000;
// Bytes a Txn op costs beyond its key and value (protobuf framing, the compare), for the
// request-size check; generous, so a commit etcd would refuse is refused here first.
constexpr size_t kOpOverheadBytes = 64;

std::string NewCommitId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}{:016x}", rng(), rng());
}

std::string EncodeValue(const Record& r, std::string_view commit_id) {
  return fmt::format("{} {} {} {} {}\n", kValueTag, r.version, r.created_ms, r.updated_ms,
                     commit_id) +
         r.body;
}

Status ValidateEtcdKey(const Key& key) {
  CARVE_RETURN_IF_ERROR(ValidateKey(key));
  if (key.kind.find('/') != std::string::npos || key.account.find('/') != std::string::npos) {
    return InvalidArgument("store key " + DescribeKey(key) +
                           ": kind and account must not contain '/' (etcd key separator)");
  }
  if (key.kind.starts_with('_')) {
    return InvalidArgument("store key " + DescribeKey(key) +
                           ": kinds starting with '_' are reserved (PREFIX/_ha/ holds leadership)");
  }
  return OkStatus();
}

json KeyField(std::string_view k) { return Base64Encode(k); }

}  // namespace

// A record as etcd holds it.
struct EtcdStore::Stored {
  Record record;
  int64_t mod_revision = 0;
  std::string commit_id;
};

// One Commit worked out against what was read: the distinct keys in the order the mutations
// first touch them, their state before and after, and the records to return.
struct EtcdStore::Plan {
  std::vector<Key> keys;
  std::vector<std::optional<Stored>> before;
  std::vector<std::optional<Record>> after;
  std::vector<Record> written;  // In mutation order, as Commit returns them.
  std::string commit_id;
};

namespace {

Result<EtcdStore::Stored> DecodeStored(Key key, const json& kv);

}  // namespace

EtcdStore::EtcdStore(std::unique_ptr<EtcdClient> client, EtcdStoreOptions options)
    : client_(std::move(client)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock::Get()) {
  if (options_.cache_reads) {
    cache_ = std::make_unique<RecordCache>();
    cached_reads_ = true;
  }
}

EtcdStore::~EtcdStore() {
  stopping_ = true;
  client_->CancelStreams();
  if (watcher_.joinable()) watcher_.join();
}

Result<std::unique_ptr<EtcdStore>> EtcdStore::Open(std::unique_ptr<EtcdClient> client,
                                                   EtcdStoreOptions options) {
  if (options.prefix.empty() || options.prefix.front() != '/' || options.prefix == "/") {
    return InvalidArgument("etcd key prefix '" + options.prefix +
                           "' must start with '/' and not be the whole keyspace");
  }
  if (options.cache_reads && !options.watch) {
    return InvalidArgument(
        "an etcd store's read cache is kept by its watch: cache_reads needs watch");
  }
  const std::string root = options.prefix + "/";
  CARVE_ASSIGN_OR_RETURN(json head,
                         client->Read("kv/range", json{{"key", KeyField(root)},
                                                       {"range_end", KeyField(PrefixEnd(root))},
                                                       {"count_only", true}}));
  int64_t revision = JsonInt(head.value("header", json::object()), "revision");
  std::unique_ptr<EtcdStore> store(new EtcdStore(std::move(client), std::move(options)));
  if (store->cache_) {
    // The watch starts after the listing's revision, so no write falls between the two.
    CARVE_ASSIGN_OR_RETURN(std::vector<Record> all,
                           store->RangeRecords(root, PrefixEnd(root), 0, &revision));
    store->cache_->Reset(std::move(all), revision);
  }
  if (store->options_.watch) {
    store->watcher_ = std::thread([s = store.get(), revision] { s->WatchLoop(revision + 1); });
  }
  return store;
}

Result<std::unique_ptr<EtcdStore>> EtcdStore::OpenUrl(std::string_view url,
                                                      EtcdStoreOptions options, EtcdTls tls) {
  CARVE_ASSIGN_OR_RETURN(EtcdUrl parsed, ParseEtcdUrl(url));
  options.prefix = parsed.prefix;
  if (!parsed.tls && (!tls.ca_file.empty() || !tls.cert_file.empty())) {
    return InvalidArgument("store URL '" + std::string(url) +
                           "': certificates are given, so the URL must be etcds://");
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return InvalidArgument("a client certificate for etcd needs both its certificate and its key");
  }
  tls.enabled = parsed.tls;
  EtcdClientOptions client;
  client.endpoints = std::move(parsed.endpoints);
  client.tls = std::move(tls);
  return Open(std::make_unique<EtcdClient>(std::move(client)), std::move(options));
}

std::string EtcdStore::EtcdKey(const Key& key) const {
  return options_.prefix + "/" + key.kind + "/" + key.account + "/" + key.name;
}

std::optional<Key> EtcdStore::KeyOf(std::string_view etcd_key) const {
  return RecordKeyOf(options_.prefix, etcd_key);
}

std::optional<Key> RecordKeyOf(std::string_view prefix, std::string_view etcd_key) {
  const std::string root = std::string(prefix) + "/";
  if (!etcd_key.starts_with(root)) return std::nullopt;
  etcd_key.remove_prefix(root.size());
  const size_t a = etcd_key.find('/');
  if (a == std::string_view::npos || etcd_key.starts_with('_')) return std::nullopt;  // _ha/...
  const size_t n = etcd_key.find('/', a + 1);
  if (n == std::string_view::npos) return std::nullopt;
  return Key{std::string(etcd_key.substr(a + 1, n - a - 1)), std::string(etcd_key.substr(0, a)),
             std::string(etcd_key.substr(n + 1))};
}

namespace {

// kv: a mvccpb.KeyValue as the gateway writes it.
Result<EtcdStore::Stored> DecodeStored(Key key, const json& kv) {
  auto value = JsonBytes(kv, "value");
  const std::string where = "etcd value of " + DescribeKey(key);
  if (!value) return Internal(where + " is not base64");
  const size_t nl = value->find('\n');
  std::vector<std::string> fields;
  {
    std::string_view header = std::string_view(*value).substr(0, nl);
    while (!header.empty()) {
      const size_t sp = header.find(' ');
      fields.emplace_back(header.substr(0, sp));
      header = sp == std::string_view::npos ? std::string_view() : header.substr(sp + 1);
    }
  }
  if (nl == std::string::npos || fields.size() != 5 || fields[0] != kValueTag) {
    return Internal(where + " was not written by carve (no 'carve1' header line)");
  }
  EtcdStore::Stored s;
  s.record.key = std::move(key);
  auto number = [](const std::string& text, int64_t& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size();
  };
  if (!number(fields[1], s.record.version) || !number(fields[2], s.record.created_ms) ||
      !number(fields[3], s.record.updated_ms) || s.record.version <= 0) {
    return Internal(where + " has a malformed header line");
  }
  s.record.body = value->substr(nl + 1);
  s.mod_revision = JsonInt(kv, "mod_revision");
  s.commit_id = std::move(fields[4]);
  return s;
}

// The mutations applied in order to `plan.before`, by the rules every Store applies
// (CheckMutation).
Status Simulate(std::vector<Mutation>& mutations, EtcdStore::Plan& plan, int64_t now) {
  std::map<Key, size_t> index;
  for (size_t i = 0; i < plan.keys.size(); ++i) index[plan.keys[i]] = i;
  plan.after.clear();
  for (const auto& b : plan.before) {
    plan.after.push_back(b ? std::optional<Record>(b->record) : std::nullopt);
  }
  plan.written.clear();
  for (const Mutation& m : mutations) {
    const Key& key = MutationKey(m);
    std::optional<Record>& cur = plan.after[index.at(key)];
    CARVE_RETURN_IF_ERROR(CheckMutation(m, cur ? &*cur : nullptr));
    if (const auto* put = std::get_if<Put>(&m)) {
      cur = Record{key, put->body, cur ? cur->version + 1 : 1, cur ? cur->created_ms : now, now};
      plan.written.push_back(*cur);
    } else {
      cur.reset();
    }
  }
  return OkStatus();
}

// Whether `plan`'s transaction is reflected in `now_stored` (the same keys, read again): a key
// it put carries its commit id. A commit that only removes leaves no mark; it counts as landed
// when every key it removes is gone, which is the state its success would have left.
bool ShowsLanded(const EtcdStore::Plan& plan,
                 const std::vector<std::optional<EtcdStore::Stored>>& now_stored) {
  bool puts = false;
  bool removed = true;
  for (size_t i = 0; i < plan.keys.size(); ++i) {
    if (plan.after[i]) {
      puts = true;
      if (now_stored[i] && now_stored[i]->commit_id == plan.commit_id) return true;
    } else if (plan.before[i] && now_stored[i]) {
      removed = false;
    }
  }
  return !puts && removed;
}

}  // namespace

namespace {

// Ranges of `keys`, one request_range op each (for a Txn's success or failure branch).
json RangeOps(const std::vector<std::string>& etcd_keys) {
  json ops = json::array();
  for (const auto& k : etcd_keys) ops.push_back({{"request_range", {{"key", KeyField(k)}}}});
  return ops;
}

// The first keys.size() range responses of a Txn, decoded.
Result<std::vector<std::optional<EtcdStore::Stored>>> ParseRanges(const json& responses,
                                                                  const std::vector<Key>& keys) {
  if (!responses.is_array() || responses.size() < keys.size()) {
    return Internal("etcd answered " + std::to_string(responses.size()) + " ranges for " +
                    std::to_string(keys.size()) + " keys");
  }
  std::vector<std::optional<EtcdStore::Stored>> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    const json kvs =
        responses[i].value("response_range", json::object()).value("kvs", json::array());
    if (kvs.empty()) {
      out.emplace_back();
      continue;
    }
    CARVE_ASSIGN_OR_RETURN(EtcdStore::Stored s, DecodeStored(keys[i], kvs.front()));
    out.emplace_back(std::move(s));
  }
  return out;
}

}  // namespace

Result<std::vector<std::optional<EtcdStore::Stored>>> EtcdStore::ReadKeys(
    const std::vector<Key>& keys) {
  std::vector<std::string> etcd_keys;
  etcd_keys.reserve(keys.size());
  for (const Key& k : keys) etcd_keys.push_back(EtcdKey(k));
  // A Txn of ranges only: one round trip, one revision for every key, and safe to resend.
  CARVE_ASSIGN_OR_RETURN(
      json reply,
      client_->Read("kv/txn", json{{"compare", json::array()}, {"success", RangeOps(etcd_keys)}}));
  return ParseRanges(reply.value("responses", json::array()), keys);
}

Result<json> EtcdStore::BuildTxn(const Plan& plan, const std::optional<EtcdFence>& fence) const {
  json compare = json::array();
  json success = json::array();
  std::vector<std::string> etcd_keys;
  size_t bytes = 0;
  for (size_t i = 0; i < plan.keys.size(); ++i) {
    const std::string key = EtcdKey(plan.keys[i]);
    if (plan.before[i]) {
      compare.push_back({{"key", KeyField(key)},
                         {"target", "MOD"},
                         {"result", "EQUAL"},
                         {"mod_revision", std::to_string(plan.before[i]->mod_revision)}});
    } else {
      compare.push_back({{"key", KeyField(key)},
                         {"target", "CREATE"},
                         {"result", "EQUAL"},
                         {"create_revision", "0"}});
    }
    bytes += key.size() + kOpOverheadBytes;
    if (plan.after[i]) {
      const std::string value = EncodeValue(*plan.after[i], plan.commit_id);
      bytes += value.size();
      success.push_back(
          {{"request_put", {{"key", KeyField(key)}, {"value", Base64Encode(value)}}}});
    } else if (plan.before[i]) {
      success.push_back({{"request_delete_range", {{"key", KeyField(key)}}}});
    }
    etcd_keys.push_back(key);
  }
  if (bytes > options_.max_request_bytes) {
    return InvalidArgument("a commit of " + std::to_string(bytes) + " bytes is more than the " +
                           std::to_string(options_.max_request_bytes) +
                           " bytes one etcd transaction may carry (etcd --max-request-bytes)");
  }
  // When a compare fails, the failure branch reads every key (and the fence) at the Txn's
  // revision, so the next attempt plans against that without reading again.
  if (fence) {
    compare.push_back({{"key", KeyField(fence->key)},
                       {"target", "CREATE"},
                       {"result", "EQUAL"},
                       {"create_revision", std::to_string(fence->create_revision)}});
    etcd_keys.push_back(fence->key);
  }
  return json{{"compare", std::move(compare)},
              {"success", std::move(success)},
              {"failure", RangeOps(etcd_keys)}};
}

Result<std::vector<Record>> EtcdStore::Apply(std::vector<Mutation> mutations) {
  Plan plan;
  bool creates_only = true;
  {
    std::map<Key, size_t> seen;
    for (const Mutation& m : mutations) {
      const Key& key = MutationKey(m);
      CARVE_RETURN_IF_ERROR(ValidateEtcdKey(key));
      if (seen.emplace(key, plan.keys.size()).second) plan.keys.push_back(key);
      const auto* put = std::get_if<Put>(&m);
      creates_only = creates_only && put != nullptr && !put->expected_version.has_value();
    }
  }
  std::optional<EtcdFence> fence;
  {
    std::lock_guard lock(fence_mu_);
    fence = fence_;
  }
  if (!fence && options_.require_fence) {
    fenced_.fetch_add(1);
    return FailedPrecondition(
        "this replica does not lead, so it does not write: its writes go to the leader");
  }
  const size_t max_keys = options_.max_commit_keys - (fence ? 1 : 0);  // The fence is a compare.
  if (plan.keys.size() > max_keys) {
    return InvalidArgument("a commit of " + std::to_string(plan.keys.size()) +
                           " records is more than the " + std::to_string(max_keys) +
                           " that one etcd transaction may write (etcd --max-txn-ops)");
  }
  if (plan.keys.empty()) return std::vector<Record>{};
  plan.commit_id = NewCommitId();
  const int64_t now = clock_.UnixMillis();
  // The state to plan the next attempt against, when it is known without a read. Creates
  // assume their keys absent: if one is not, the Txn fails and its failure branch says so.
  std::optional<std::vector<std::optional<Stored>>> known;
  if (creates_only) known.emplace(plan.keys.size());
  bool maybe_in_flight = false;  // An earlier attempt's Txn may still land.
  for (int attempt = 0; attempt < options_.max_commit_attempts; ++attempt) {
    std::vector<std::optional<Stored>> read;
    if (known) {
      read = std::move(*known);
      known.reset();
    } else {
      CARVE_ASSIGN_OR_RETURN(read, ReadKeys(plan.keys));
    }
    if (maybe_in_flight && ShowsLanded(plan, read)) {
      ++unknown_resolved_;
      return plan.written;
    }
    plan.before = std::move(read);
    CARVE_RETURN_IF_ERROR(Simulate(mutations, plan, now));
    CARVE_ASSIGN_OR_RETURN(json txn, BuildTxn(plan, fence));
    EtcdReply reply = client_->Call("kv/txn", txn, EtcdCall::kWrite);
    if (reply.body.has_value()) {
      const json& body = *reply.body;
      if (body.value("succeeded", false)) {
        // Store::Commit notes these keys now; the watch is not to note them again.
        NoteOwnRevision(JsonInt(body.value("header", json::object()), "revision"));
        return plan.written;
      }
      const json responses = body.value("responses", json::array());
      if (fence) {
        const json held = responses.size() > plan.keys.size()
                              ? responses[plan.keys.size()]
                                    .value("response_range", json::object())
                                    .value("kvs", json::array())
                              : json::array();
        if (held.empty() || JsonInt(held[0], "create_revision") != fence->create_revision) {
          ++fenced_;
          return FailedPrecondition(
              "this carve server is no longer the leader (its leadership key " + fence->key +
              " is " + (held.empty() ? std::string("gone") : "held by another replica") +
              "), so it refuses to write; nothing was written");
        }
      }
      if (!creates_only || attempt > 0) ++conflicts_;  // Another writer came between.
      CARVE_ASSIGN_OR_RETURN(known, ParseRanges(responses, plan.keys));
      continue;
    }
    if (!reply.outcome_unknown) {
      Error e = std::move(reply.body).error();
      if (e.code == ErrorCode::kUnavailable) e.message += "; nothing was written, retry the call";
      return e;
    }
    // Sent, and no answer: find out from the keys before anything is resent (the next
    // attempt's read).
    maybe_in_flight = true;
    auto again = ReadKeys(plan.keys);
    if (!again.has_value()) {
      return Unavailable("etcd commit of " + DescribeKey(plan.keys.front()) +
                         (plan.keys.size() > 1 ? " and others" : "") +
                         ": the outcome is unknown (" + reply.body.error().message +
                         ") and etcd cannot be read to find out (" + again.error().message + ")");
    }
    if (!reply.worth_resending) {
      if (ShowsLanded(plan, *again)) {
        ++unknown_resolved_;
        return plan.written;
      }
      return reply.body.error();  // It did not land, and etcd refuses writes for now.
    }
    known = std::move(again).value();
  }
  return Unavailable("etcd commit of " + DescribeKey(plan.keys.front()) +
                     ": other writers changed its records " +
                     std::to_string(options_.max_commit_attempts) +
                     " times in a row; nothing was written, retry the call");
}

Status EtcdStore::Import(const std::vector<Record>& records) {
  if (records.size() > max_commit_keys()) {
    return InvalidArgument("an import of " + std::to_string(records.size()) +
                           " records is more than one etcd transaction may write (" +
                           std::to_string(max_commit_keys()) + ")");
  }
  json compare = json::array();
  json success = json::array();
  std::vector<std::string> etcd_keys;
  const std::string commit_id = NewCommitId();
  for (const Record& r : records) {
    CARVE_RETURN_IF_ERROR(ValidateEtcdKey(r.key));
    const std::string key = EtcdKey(r.key);
    compare.push_back({{"key", KeyField(key)},
                       {"target", "CREATE"},
                       {"result", "EQUAL"},
                       {"create_revision", "0"}});
    success.push_back(
        {{"request_put",
          {{"key", KeyField(key)}, {"value", Base64Encode(EncodeValue(r, commit_id))}}}});
    etcd_keys.push_back(key);
  }
  if (records.empty()) return OkStatus();
  EtcdReply reply = client_->Call("kv/txn",
                                  json{{"compare", std::move(compare)},
                                       {"success", std::move(success)},
                                       {"failure", RangeOps(etcd_keys)}},
                                  EtcdCall::kWrite);
  if (!reply.body.has_value()) {
    if (!reply.outcome_unknown) return reply.body.error();
    // Landed if the first record carries this import's commit id.
    CARVE_ASSIGN_OR_RETURN(auto now, ReadKeys({records.front().key}));
    if (now.front() && now.front()->commit_id == commit_id) return OkStatus();
    return Unavailable("etcd import: " + reply.body.error().message + "; nothing was written");
  }
  if (reply.body->value("succeeded", false)) return OkStatus();
  std::vector<Key> keys;
  keys.reserve(records.size());
  for (const Record& r : records) keys.push_back(r.key);
  CARVE_ASSIGN_OR_RETURN(auto held,
                         ParseRanges(reply.body->value("responses", json::array()), keys));
  for (size_t i = 0; i < held.size(); ++i) {
    if (held[i]) return AlreadyExistsError(keys[i], held[i]->record.version);
  }
  return Unavailable("etcd import: the transaction failed and no key explains it; retry");
}

void EtcdStore::SetCachedReads(bool on) { cached_reads_ = on && cache_ != nullptr; }

bool EtcdStore::CacheCaughtUp() {
  if (!cached_reads_) return false;
  // etcd's revision now, by a quorum read of one key that never exists: whatever was
  // acknowledged before this call is at or below it.
  auto head = client_->Read("kv/range",
                            json{{"key", KeyField(options_.prefix + "/")}, {"count_only", true}});
  const bool fresh =
      head.has_value() &&
      cache_->AwaitRevision(JsonInt(head->value("header", json::object()), "revision"),
                            options_.cache_wait);
  (fresh ? cache_hits_ : cache_fallbacks_).fetch_add(1);
  return fresh;
}

Result<Record> EtcdStore::Get(const Key& key) {
  CARVE_RETURN_IF_ERROR(ValidateEtcdKey(key));
  if (CacheCaughtUp()) {
    if (auto r = cache_->Get(key)) return std::move(*r);
    return NotFoundError(key);
  }
  CARVE_ASSIGN_OR_RETURN(json reply,
                         client_->Read("kv/range", json{{"key", KeyField(EtcdKey(key))}}));
  const json kvs = reply.value("kvs", json::array());
  if (kvs.empty()) return NotFoundError(key);
  CARVE_ASSIGN_OR_RETURN(Stored s, DecodeStored(key, kvs.front()));
  return std::move(s.record);
}

Result<std::vector<Record>> EtcdStore::RangeRecords(const std::string& start,
                                                    const std::string& end, int limit,
                                                    int64_t* at_revision) {
  std::vector<Record> out;
  std::string from = start;
  int64_t revision = 0;  // Later pages read at the first page's revision: one consistent view.
  while (true) {
    const int want =
        limit > 0 ? std::min(kListPage, limit - static_cast<int>(out.size())) : kListPage;
    json request = {{"key", KeyField(from)}, {"range_end", KeyField(end)}, {"limit", want}};
    if (revision != 0) request["revision"] = std::to_string(revision);
    CARVE_ASSIGN_OR_RETURN(json reply, client_->Read("kv/range", request));
    if (revision == 0) revision = JsonInt(reply.value("header", json::object()), "revision");
    if (at_revision != nullptr) *at_revision = revision;
    const json kvs = reply.value("kvs", json::array());
    for (const json& kv : kvs) {
      auto etcd_key = JsonBytes(kv, "key");
      std::optional<Key> key = etcd_key ? KeyOf(*etcd_key) : std::nullopt;
      if (!key) continue;  // Not a record key (nothing else lives under the prefix today).
      CARVE_ASSIGN_OR_RETURN(Stored s, DecodeStored(std::move(*key), kv));
      out.push_back(std::move(s.record));
      from = *etcd_key + std::string(1, '\0');
    }
    const bool full = limit > 0 && static_cast<int>(out.size()) >= limit;
    if (!reply.value("more", false) || kvs.empty() || full) return out;
  }
}

Result<std::vector<Record>> EtcdStore::List(const std::string& account, const std::string& kind,
                                            const ListOptions& options) {
  if (kind.find('/') != std::string::npos || account.find('/') != std::string::npos) {
    return InvalidArgument("store list of kind '" + kind + "' in account '" + account +
                           "': kind and account must not contain '/'");
  }
  if (CacheCaughtUp()) return cache_->List(account, kind, options);
  const std::string base = options_.prefix + "/" + kind + "/" + account + "/";
  std::string start = base + options.name_prefix;
  if (!options.after_name.empty()) {
    start = std::max(start, base + options.after_name + std::string(1, '\0'));
  }
  return RangeRecords(start, PrefixEnd(base + options.name_prefix), options.limit);
}

Result<std::vector<Record>> EtcdStore::ListAllAccounts(const std::string& kind) {
  if (kind.find('/') != std::string::npos) {
    return InvalidArgument("store list of kind '" + kind + "': a kind must not contain '/'");
  }
  if (CacheCaughtUp()) return cache_->ListAllAccounts(kind);
  const std::string base = options_.prefix + "/" + kind + "/";
  CARVE_ASSIGN_OR_RETURN(auto out, RangeRecords(base, PrefixEnd(base), 0));
  // etcd orders by the whole key; "a/x" and "a-/x" would not sort as (account, name) does.
  std::stable_sort(out.begin(), out.end(),
                   [](const Record& a, const Record& b) { return a.key < b.key; });
  return out;
}

void EtcdStore::SetFence(EtcdFence fence) {
  std::lock_guard lock(fence_mu_);
  fence_ = std::move(fence);
}

void EtcdStore::NoteOwnRevision(int64_t revision) {
  if (!options_.watch || revision <= 0) return;
  std::lock_guard lock(own_mu_);
  own_revisions_.insert(revision);
}

bool EtcdStore::TakeOwnRevision(int64_t revision) {
  std::lock_guard lock(own_mu_);
  // Every event of a revision arrives before any of a later one, so what lies below it will
  // not be asked about again.
  own_revisions_.erase(own_revisions_.begin(), own_revisions_.lower_bound(revision));
  return own_revisions_.contains(revision);
}

std::optional<int64_t> ProgressRevision(const json& message) {
  if (!message.value("events", json::array()).empty() || message.value("created", false)) {
    return std::nullopt;
  }
  return JsonInt(message.value("header", json::object()), "revision");
}

void FeedWatchResponse(RecordCache& cache, std::string_view prefix, const json& message) {
  const json events = message.value("events", json::array());
  if (events.empty()) {
    if (auto progress = ProgressRevision(message)) cache.Advance(*progress);
    return;
  }
  std::vector<CacheEvent> changes;
  int64_t revision = 0;
  for (const json& event : events) {
    const json kv = event.value("kv", json::object());
    revision = std::max(revision, JsonInt(kv, "mod_revision"));
    auto etcd_key = JsonBytes(kv, "key");
    auto key = etcd_key ? RecordKeyOf(prefix, *etcd_key) : std::nullopt;
    if (!key) continue;  // PREFIX/_ha/...: not a record.
    if (event.value("type", "PUT") == "DELETE") {
      changes.push_back({std::move(*key), std::nullopt});
      continue;
    }
    auto stored = DecodeStored(*key, kv);
    if (!stored.has_value()) {
      spdlog::error("etcd watch: {}; left out of the read cache", stored.error().message);
      changes.push_back({std::move(*key), std::nullopt});
      continue;
    }
    changes.push_back({std::move(*key), std::move(stored->record)});
  }
  // A response holds whole revisions, so the cache now reflects the last one in it.
  cache.Apply(changes, revision);
}

Status EtcdStore::ResumeAfterCompaction(int64_t& next_revision) {
  const std::string root = options_.prefix + "/";
  int64_t now = 0;
  if (cache_) {
    CARVE_ASSIGN_OR_RETURN(std::vector<Record> all, RangeRecords(root, PrefixEnd(root), 0, &now));
    cache_->Reset(std::move(all), now);
  } else {
    CARVE_ASSIGN_OR_RETURN(json head,
                           client_->Read("kv/range", json{{"key", KeyField(root)},
                                                          {"range_end", KeyField(PrefixEnd(root))},
                                                          {"count_only", true}}));
    now = JsonInt(head.value("header", json::object()), "revision");
  }
  next_revision = now + 1;
  NoteEverything();
  spdlog::info("etcd watch of {}: history compacted; watchers re-list{}", root,
               cache_ ? ", and the read cache was listed again" : "");
  return OkStatus();
}

void EtcdStore::WatchLoop(int64_t next_revision) {
  const std::string root = options_.prefix + "/";
  while (!stopping_) {
    bool compacted = false;
    const json create = {{"key", KeyField(root)},
                         {"range_end", KeyField(PrefixEnd(root))},
                         {"start_revision", std::to_string(next_revision)},
                         {"progress_notify", true}};
    Status ended = client_->Stream(
        create,
        [&](const json& message) {
          if (stopping_) return false;
          if (JsonInt(message, "compact_revision") > 0) {
            compacted = true;
            return false;
          }
          if (message.value("canceled", false)) return false;
          std::vector<Key> keys;
          const json events = message.value("events", json::array());
          for (const json& event : events) {
            const json kv = event.value("kv", json::object());
            const int64_t revision = JsonInt(kv, "mod_revision");
            auto etcd_key = JsonBytes(kv, "key");
            auto key = etcd_key ? KeyOf(*etcd_key) : std::nullopt;
            if (key && !TakeOwnRevision(revision)) keys.push_back(*key);
            next_revision = std::max(next_revision, revision + 1);
          }
          if (!keys.empty()) {
            NoteChanged(keys);
          } else if (auto progress = ProgressRevision(message)) {
            // Every event up to it has been sent. (A response with events may carry a later
            // header revision while etcd catches a watch up, so only these move the start.)
            next_revision = std::max(next_revision, *progress + 1);
          }
          // The cache takes the response after its changes were noted: a read that found the
          // cache at revision R comes after every change up to R reached the watchers.
          if (cache_) FeedWatchResponse(*cache_, options_.prefix, message);
          return true;
        },
        std::chrono::seconds(10));
    if (stopping_) return;
    if (compacted) {
      // The history since next_revision is gone: resume from now, and have every watcher
      // re-list what it watches, which covers whatever was missed. The cache is listed anew.
      Status resumed = ResumeAfterCompaction(next_revision);
      if (resumed.ok()) continue;
      ended = resumed;
    }
    if (!ended.ok()) spdlog::debug("etcd watch of {}: {}; resuming", root, ended.error().message);
    for (int i = 0; i < 10 && !stopping_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

}  // namespace carve::store
