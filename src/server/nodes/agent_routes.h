// The agent protocol's HTTP routes (protocol/agent_protocol.h), node identity's routes
// (node_identity.h) and GET /v1/nodes.
//
//   /v1/agent/register|desired|heartbeat|status  nodes: a node credential, and only for the node
//                                                id it is bound to (403 otherwise)
//   POST /v1/agent/join                          joiners: a bootstrap token for a node credential
//   POST|GET /v1/node-tokens, DELETE /v1/node-tokens/{id}, GET /v1/nodes,
//   GET /v1/node-credentials, DELETE /v1/nodes/{node}/credential   operators
//
// `server_cert_pin` ("sha256:<hex>", or "" on plain HTTP) is the listener certificate's pin,
// answered with every new bootstrap token (`server_cert_sha256`) so that the join line it is
// printed with pins the server (docs/security.md, "TLS").
#pragma once

#include <string>

#include "http/http_server.h"
#include "server/nodes/node_identity.h"
#include "server/nodes/node_registry.h"

namespace carve::server::nodes {

void RegisterAgentRoutes(http::HttpServer& server, NodeRegistry& registry, NodeIdentity& identity,
                         std::string server_cert_pin = "");

}  // namespace carve::server::nodes
