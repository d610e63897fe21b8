#include "server/nodes/node_identity.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/bounded_json.h"
#include "protocol/agent_protocol.h"

namespace carve::server::nodes {
namespace {

constexpr std::string_view kCredentialPrefix = "carve-node.";
constexpr size_t kCredentialIdChars = 16;
constexpr size_t kCredentialSecretChars = 64;
constexpr size_t kTokenIdChars = 6;
constexpr size_t kTokenSecretChars = 16;
constexpr size_t kMaxDescription = 256;

store::Key BootstrapKey(const std::string& id) {
  return {"", std::string(kBootstrapTokenKind), id};
}
store::Key CredentialKey(const std::string& node_id) {
  return {"", std::string(kNodeCredentialKind), node_id};
}

std::string Digest(std::string_view secret) {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), out);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

std::string Hex(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

// `n` characters drawn uniformly from `alphabet` (rejection sampling: no modulo bias).
Result<std::string> RandomText(size_t n, std::string_view alphabet) {
  std::string out;
  const size_t limit = 256 - 256 % alphabet.size();
  while (out.size() < n) {
    unsigned char buf[64];
    if (RAND_bytes(buf, sizeof buf) != 1) return Internal("OpenSSL RAND_bytes failed");
    for (unsigned char b : buf) {
      if (b < limit && out.size() < n) out.push_back(alphabet[b % alphabet.size()]);
    }
  }
  return out;
}

constexpr std::string_view kTokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
constexpr std::string_view kHexAlphabet = "0123456789abcdef";

bool AllOf(std::string_view s, std::string_view alphabet) {
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return alphabet.find(c) != std::string_view::npos; });
}

// kubeadm's shape: [a-z0-9]{6}\.[a-z0-9]{16}.
std::optional<std::pair<std::string_view, std::string_view>> ParseBootstrapToken(
    std::string_view token) {
  if (token.size() != kTokenIdChars + 1 + kTokenSecretChars || token[kTokenIdChars] != '.') {
    return std::nullopt;
  }
  const std::string_view id = token.substr(0, kTokenIdChars);
  const std::string_view secret = token.substr(kTokenIdChars + 1);
  if (!AllOf(id, kTokenAlphabet) || !AllOf(secret, kTokenAlphabet)) return std::nullopt;
  return std::pair{id, secret};
}

bool SameDigest(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::optional<NodeCredentialParts> ParseNodeCredential(std::string_view credential) {
  if (!credential.starts_with(kCredentialPrefix)) return std::nullopt;
  std::string_view rest = credential.substr(kCredentialPrefix.size());
  if (rest.size() != kCredentialIdChars + 1 + kCredentialSecretChars ||
      rest[kCredentialIdChars] != '.') {
    return std::nullopt;
  }
  NodeCredentialParts parts{rest.substr(0, kCredentialIdChars),
                            rest.substr(kCredentialIdChars + 1)};
  if (!AllOf(parts.id, kHexAlphabet) || !AllOf(parts.secret, kHexAlphabet)) return std::nullopt;
  return parts;
}

NodeIdentity::NodeIdentity(store::Store& store, const Clock& clock)
    : store_(store), clock_(clock) {
  watcher_ = store_.Watch({std::string(kBootstrapTokenKind), std::string(kNodeCredentialKind)});
}

NodeIdentity::~NodeIdentity() { store_.Unwatch(watcher_); }

void NodeIdentity::ForgetLocked(const store::Key& key) {
  if (key.kind == kBootstrapTokenKind) {
    bootstrap_.erase(key.name);
    return;
  }
  auto it = by_node_.find(key.name);
  if (it == by_node_.end()) return;
  credentials_.erase(it->second);
  by_node_.erase(it);
}

void NodeIdentity::LoadLocked(const store::Record& record) {
  ForgetLocked(record.key);
  // Records this class wrote; one that does not parse (edited by hand) verifies nothing.
  Result<nlohmann::json> j = ParseJson(record.body);
  if (!j.has_value() || !j->is_object()) return;
  const std::string digest_hex = j->value("secret_sha256", "");
  if (digest_hex.size() != 2 * SHA256_DIGEST_LENGTH || !AllOf(digest_hex, kHexAlphabet)) return;
  std::string digest;
  for (size_t i = 0; i < digest_hex.size(); i += 2) {
    digest.push_back(static_cast<char>(std::stoi(digest_hex.substr(i, 2), nullptr, 16)));
  }
  if (record.key.kind == kBootstrapTokenKind) {
    bootstrap_[record.key.name] = {record.key.name, digest, j->value("expires_ms", int64_t{0})};
    return;
  }
  const std::string id = j->value("credential_id", "");
  if (id.size() != kCredentialIdChars) return;
  credentials_[id] = {record.key.name, digest, 0};
  by_node_[record.key.name] = id;
}

void NodeIdentity::RefreshLocked() {
  store::Changes changes = store_.TakeChanges(watcher_);
  if (changes.everything || reload_) {
    std::map<std::string, Secret> bootstrap, credentials;
    std::map<std::string, std::string> by_node;
    std::swap(bootstrap, bootstrap_);
    std::swap(credentials, credentials_);
    std::swap(by_node, by_node_);
    for (std::string_view kind : {kBootstrapTokenKind, kNodeCredentialKind}) {
      auto all = store_.ListAllAccounts(std::string(kind));
      if (!all.has_value()) {
        // The store is unavailable: keep what was known and read everything on the next request.
        bootstrap_ = std::move(bootstrap);
        credentials_ = std::move(credentials);
        by_node_ = std::move(by_node);
        reload_ = true;
        return;
      }
      for (const auto& r : *all) LoadLocked(r);
    }
    reload_ = false;
    return;
  }
  for (const auto& key : changes.keys) {
    auto r = store_.Get(key);
    if (r.has_value()) {
      LoadLocked(*r);
    } else if (r.error().code == ErrorCode::kNotFound) {
      ForgetLocked(key);
    } else {
      reload_ = true;  // Unknown: read everything next time rather than guess.
    }
  }
}

Result<BootstrapToken> NodeIdentity::CreateBootstrapToken(std::chrono::seconds ttl,
                                                          std::string description) {
  if (ttl < std::chrono::seconds(1) || ttl > kMaxTtl) {
    return InvalidArgument(fmt::format("ttl_seconds {}: must be from 1 to {} (7 days)",
                                       ttl.count(), kMaxTtl.count()));
  }
  if (description.size() > kMaxDescription ||
      std::any_of(description.begin(), description.end(),
                  [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
    return InvalidArgument(fmt::format(
        "description: at most {} characters without control characters", kMaxDescription));
  }
  CARVE_ASSIGN_OR_RETURN(std::string id, RandomText(kTokenIdChars, kTokenAlphabet));
  CARVE_ASSIGN_OR_RETURN(std::string secret, RandomText(kTokenSecretChars, kTokenAlphabet));
  BootstrapToken t{id, id + "." + secret, clock_.UnixMillis() + ttl.count() * 1000,
                   std::move(description)};
  const nlohmann::json body{{"secret_sha256", Hex(Digest(secret))},
                            {"expires_ms", t.expires_ms},
                            {"description", t.description}};
  CARVE_RETURN_IF_ERROR(store_.Create(BootstrapKey(id), body.dump()));
  return t;
}

Result<std::vector<BootstrapToken>> NodeIdentity::ListBootstrapTokens() {
  CARVE_ASSIGN_OR_RETURN(auto records, store_.ListAllAccounts(std::string(kBootstrapTokenKind)));
  std::vector<BootstrapToken> out;
  const int64_t now = clock_.UnixMillis();
  for (const auto& r : records) {
    Result<nlohmann::json> j = ParseJson(r.body);
    if (!j.has_value() || !j->is_object()) continue;
    BootstrapToken t{r.key.name, "", j->value("expires_ms", int64_t{0}),
                     j->value("description", "")};
    if (t.expires_ms > now) out.push_back(std::move(t));
  }
  return out;
}

Status NodeIdentity::DeleteBootstrapToken(const std::string& id) {
  if (id.size() != kTokenIdChars || !AllOf(id, kTokenAlphabet)) {
    return InvalidArgument(fmt::format("token id '{}': 6 lowercase letters or digits",
                                       id.substr(0, 16)));
  }
  Status s = store_.Delete(BootstrapKey(id));
  if (!s.ok() && s.error().code == ErrorCode::kNotFound) {
    return NotFound(fmt::format("no bootstrap token {}", id));
  }
  return s;
}

std::optional<std::string> NodeIdentity::VerifyBootstrapToken(std::string_view token) {
  auto parts = ParseBootstrapToken(token);
  if (!parts) return std::nullopt;
  std::lock_guard lock(mu_);
  RefreshLocked();
  auto it = bootstrap_.find(std::string(parts->first));
  if (it == bootstrap_.end() || it->second.expires_ms <= clock_.UnixMillis() ||
      !SameDigest(it->second.digest, Digest(parts->second))) {
    return std::nullopt;
  }
  return it->first;
}

Result<std::string> NodeIdentity::Bind(const std::string& node_id, const std::string& joined_with,
                                       bool replace) {
  CARVE_RETURN_IF_ERROR(
      protocol::CheckNodeId(node_id, joined_with == "embedded" ? "embedded node" : "the join"));
  CARVE_ASSIGN_OR_RETURN(std::string id, RandomText(kCredentialIdChars, kHexAlphabet));
  CARVE_ASSIGN_OR_RETURN(std::string secret, RandomText(kCredentialSecretChars, kHexAlphabet));
  const nlohmann::json body{{"credential_id", id},
                            {"secret_sha256", Hex(Digest(secret))},
                            {"joined_with", joined_with}};
  store::Put put{CredentialKey(node_id), body.dump(), std::nullopt};
  if (replace) put.expected_version = 0;
  Result<std::vector<store::Record>> wrote = store_.Commit({std::move(put)});
  if (!wrote.has_value()) {
    if (wrote.error().code == ErrorCode::kAlreadyExists) {
      return AlreadyExists(fmt::format(
          "node {} already has a credential; an operator revokes it first (carve node revoke {})",
          node_id, node_id));
    }
    return wrote.error();
  }
  return std::string(kCredentialPrefix) + id + "." + secret;
}

Result<std::string> NodeIdentity::Join(const std::string& token_id, const std::string& node_id) {
  {
    std::lock_guard lock(mu_);
    RefreshLocked();
    auto it = bootstrap_.find(token_id);
    if (it == bootstrap_.end() || it->second.expires_ms <= clock_.UnixMillis()) {
      return FailedPrecondition(
          fmt::format("bootstrap token {} expired or was deleted", token_id));
    }
  }
  return Bind(node_id, token_id, /*replace=*/false);
}

Result<std::string> NodeIdentity::Issue(const std::string& node_id) {
  return Bind(node_id, "embedded", /*replace=*/true);
}

std::optional<std::string> NodeIdentity::VerifyNode(std::string_view credential) {
  auto parts = ParseNodeCredential(credential);
  if (!parts) return std::nullopt;
  std::lock_guard lock(mu_);
  RefreshLocked();
  auto it = credentials_.find(std::string(parts->id));
  if (it == credentials_.end() || !SameDigest(it->second.digest, Digest(parts->secret))) {
    return std::nullopt;
  }
  return it->second.name;
}

Status NodeIdentity::Revoke(const std::string& node_id) {
  CARVE_RETURN_IF_ERROR(protocol::CheckNodeId(node_id, "revoke"));
  Status s = store_.Delete(CredentialKey(node_id));
  if (!s.ok() && s.error().code == ErrorCode::kNotFound) {
    return NotFound(fmt::format("node {} has no credential", node_id));
  }
  return s;
}

Result<std::vector<NodeCredentialInfo>> NodeIdentity::ListNodeCredentials() {
  CARVE_ASSIGN_OR_RETURN(auto records, store_.ListAllAccounts(std::string(kNodeCredentialKind)));
  std::vector<NodeCredentialInfo> out;
  for (const auto& r : records) {
    Result<nlohmann::json> j = ParseJson(r.body);
    if (!j.has_value() || !j->is_object()) continue;
    out.push_back({r.key.name, j->value("credential_id", ""), r.created_ms,
                   j->value("joined_with", "")});
  }
  return out;
}

}  // namespace carve::server::nodes
