// How an agent gets the credential it speaks for its node with (docs/security.md, "Nodes").
//
// `carve agent --join-token T` (or CARVE_JOIN_TOKEN) on a data dir without a credential trades
// the operator's bootstrap token for a node credential (POST /v1/agent/join), and keeps it in
// <data-dir>/node-credential (JSON {"node_id", "credential"}, mode 0600). Every later start reads
// the file and needs no token. A data dir belongs to one node: a file naming another node id is
// refused rather than used or overwritten.
//
// Over https:// the agent joins only a server whose certificate carries the pinned key
// (`--server-cert-sha256`, printed with the token): the check is part of the TLS handshake, so a
// wrong server gets no byte of the request, token included. The pins are kept in the same file
// ("server_cert_sha256") and every later connection checks them too.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "protocol/server_trust.h"

namespace carve::agent::node {

// Trades `join_token` for a node credential bound to `node_id`, asking `servers` (base URLs, the
// replicas of one control plane) in turn while they are unreachable, trusting https servers as
// `trust` says. The server's refusal (an unknown or expired token, a node that already has a
// credential) is returned as it said it; a server that is not the pinned one as
// FailedPrecondition naming both pins.
Result<std::string> JoinNode(const std::vector<std::string>& servers, const std::string& join_token,
                             const std::string& node_id, const protocol::ServerTrust& trust = {});

struct NodeCredential {
  std::string credential;
  // The pins https servers are trusted by from now on (empty: `trust.ca_file`, or the system's
  // CAs, with the host name).
  std::vector<std::string> server_pins;
};

// The credential in `file` for `node_id`; or, when there is no file and `join_token` is set, a
// credential from JoinNode, written to `file` first with `trust.pins`. Pins given to a later
// start (a server whose key changed) replace the file's. NotFound naming the flag when there is
// neither file nor token; InvalidArgument for a file that is not one, names another node, or can
// be read by others.
Result<NodeCredential> LoadOrJoin(const std::string& file, const std::vector<std::string>& servers,
                                  const std::string& join_token, const std::string& node_id,
                                  const protocol::ServerTrust& trust = {});

}  // namespace carve::agent::node
