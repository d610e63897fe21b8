// How an agent gets the credential it speaks for its node with (docs/security.md, "Nodes").
//
// `carve agent --join-token T` (or CARVE_JOIN_TOKEN) on a data dir without a credential trades
// the operator's bootstrap token for a node credential (POST /v1/agent/join), and keeps it in
// <data-dir>/node-credential (JSON {"node_id", "credential"}, mode 0600). Every later start reads
// the file and needs no token. A data dir belongs to one node: a file naming another node id is
// refused rather than used or overwritten.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace carve::agent::node {

// Trades `join_token` for a node credential bound to `node_id`, asking `servers` (base URLs, the
// replicas of one control plane) in turn while they are unreachable. The server's refusal (an
// unknown or expired token, a node that already has a credential) is returned as it said it.
Result<std::string> JoinNode(const std::vector<std::string>& servers,
                             const std::string& join_token, const std::string& node_id);

// The credential in `file` for `node_id`; or, when there is no file and `join_token` is set, a
// credential from JoinNode, written to `file` first. NotFound naming the flag when there is
// neither; InvalidArgument for a file that is not one, names another node, or can be read by
// others.
Result<std::string> LoadOrJoin(const std::string& file, const std::vector<std::string>& servers,
                               const std::string& join_token, const std::string& node_id);

}  // namespace carve::agent::node
