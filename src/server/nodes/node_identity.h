// NodeIdentity: who may speak for a node (docs/security.md, "Nodes").
//
// A node agent proves itself with a credential of its own, never with a tenant's or an
// operator's key. It gets one by joining:
//
//   1. an operator creates a bootstrap token (`carve node token create`, POST /v1/node-tokens):
//      "<6>.<16>" lowercase letters and digits, as kubeadm's, valid for a TTL;
//   2. the agent presents it once (POST /v1/agent/join {"node_id": ...}, Authorization: Bearer)
//      and receives a node credential, "carve-node.<16 hex id>.<64 hex secret>", bound to that
//      node id; it keeps it in <agent data>/node-credential, mode 0600;
//   3. every agent request then carries the credential as a bearer token, and the agent routes
//      accept a node id only from the credential bound to it.
//
// The store keeps only SHA-256 digests of the secrets, as fleet-global records (kind
// "NodeBootstrapToken" by token id, "NodeCredential" by node id), so every replica verifies the
// same credentials and a leader that changes keeps them. A node id is bound to one credential:
// joining as a node that has one is refused until an operator revokes it (`carve node revoke`).
// A revocation or a deleted token takes effect on the next request, on every replica: each
// verification first takes the store's change feed (which carries peers' writes on etcd).
//
// The embedded agents of `carve server` get their credentials from Issue, in process; nothing
// crosses the network to bootstrap them. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "store/store.h"

namespace carve::server::nodes {

inline constexpr std::string_view kBootstrapTokenKind = "NodeBootstrapToken";
inline constexpr std::string_view kNodeCredentialKind = "NodeCredential";

// What an operator sees of a bootstrap token (never its secret after creation).
struct BootstrapToken {
  std::string id;           // the 6 characters before the dot
  std::string token;        // the whole token: only in the answer that created it
  int64_t expires_ms = 0;   // Unix millis
  std::string description;  // the operator's note, at most 256 characters
};

// What an operator sees of a node's credential.
struct NodeCredentialInfo {
  std::string node_id;
  std::string credential_id;  // the 16 hex digits after "carve-node."
  int64_t created_ms = 0;
  std::string joined_with;    // the bootstrap token id, or "embedded" for Issue
};

class NodeIdentity {
 public:
  static constexpr std::chrono::seconds kMaxTtl{7 * 24 * 3600};
  static constexpr std::chrono::seconds kDefaultTtl{24 * 3600};

  // `store` and `clock` must outlive it.
  NodeIdentity(store::Store& store, const Clock& clock);
  ~NodeIdentity();
  NodeIdentity(const NodeIdentity&) = delete;
  NodeIdentity& operator=(const NodeIdentity&) = delete;

  // A fresh bootstrap token valid for `ttl` (1 s to kMaxTtl). InvalidArgument naming the rule
  // for a TTL or description out of bounds.
  Result<BootstrapToken> CreateBootstrapToken(std::chrono::seconds ttl, std::string description);
  // Every unexpired token, without secrets, by id.
  Result<std::vector<BootstrapToken>> ListBootstrapTokens();
  // NotFound when there is no such token.
  Status DeleteBootstrapToken(const std::string& id);

  // The id of the bootstrap token `token`, when it is well formed, known, unexpired and its
  // secret matches (constant-time); nullopt otherwise.
  std::optional<std::string> VerifyBootstrapToken(std::string_view token);

  // Binds `node_id` to a fresh credential for the holder of bootstrap token `token_id` (already
  // verified) and returns the credential. InvalidArgument for a bad node id; FailedPrecondition
  // when the token expired or was deleted since; AlreadyExists when the node has a credential.
  Result<std::string> Join(const std::string& token_id, const std::string& node_id);
  // A fresh credential for `node_id`, replacing any it had: for the server's own embedded agents.
  Result<std::string> Issue(const std::string& node_id);
  // The node id `credential` speaks for, when it is well formed, known and its secret matches.
  std::optional<std::string> VerifyNode(std::string_view credential);
  // Removes the node's credential: its agent is refused from the next request on. NotFound when
  // the node has none.
  Status Revoke(const std::string& node_id);
  // Every node credential, by node id.
  Result<std::vector<NodeCredentialInfo>> ListNodeCredentials();

 private:
  struct Secret {
    std::string name;    // the record's name: the node id, or the bootstrap token id
    std::string digest;  // SHA-256 of the secret, 32 raw bytes
    int64_t expires_ms = 0;
  };
  // Reads what the change feed says was written since the last call. Holds mu_.
  void RefreshLocked();
  void LoadLocked(const store::Record& record);
  void ForgetLocked(const store::Key& key);
  Result<std::string> Bind(const std::string& node_id, const std::string& joined_with,
                           bool replace);

  store::Store& store_;
  const Clock& clock_;
  std::mutex mu_;
  int watcher_ = -1;
  bool reload_ = true;  // read every record on the next refresh
  std::map<std::string, Secret> bootstrap_;     // by token id
  std::map<std::string, Secret> credentials_;   // by credential id; name = node id
  std::map<std::string, std::string> by_node_;  // node id -> credential id
};

// "carve-node.<id>.<secret>" split; nullopt unless it has exactly that shape.
struct NodeCredentialParts {
  std::string_view id;
  std::string_view secret;
};
std::optional<NodeCredentialParts> ParseNodeCredential(std::string_view credential);

}  // namespace carve::server::nodes
