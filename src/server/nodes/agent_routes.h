// The agent protocol's HTTP routes (protocol/agent_protocol.h) and GET /v1/nodes, all SigV4:
// agents sign with the same credentials file the aws CLI uses.
#pragma once

#include "server/http_server.h"
#include "server/nodes/node_registry.h"

namespace carve::server::nodes {

void RegisterAgentRoutes(HttpServer& http, NodeRegistry& registry);

}  // namespace carve::server::nodes
