# carve_nodes: the fleet's nodes. The server side of the agent protocol (node registry, agent
# routes, the NodeDriver that carves through agents), which node belongs to
# which owner (NodeClaims), and the capacity of an owner's nodes (NodePool over the core
# placement engine), shared by SageMaker copies and queue tasks.
set(nd ${CMAKE_CURRENT_SOURCE_DIR}/nodes)
carve_library(carve_nodes
  SRCS ${nd}/node_registry.cc ${nd}/node_registry_carve.cc ${nd}/node_registry_views.cc ${nd}/agent_node_driver.cc ${nd}/agent_routes.cc
       ${nd}/node_claims.cc ${nd}/node_pool.cc ${nd}/allocation_json.cc ${nd}/node_identity.cc
       ${nd}/node_driver.cc
  DEPS carve_protocol carve_http carve_catalog carve_layout carve_placement carve_store
       nlohmann_json::nlohmann_json spdlog::spdlog fmt::fmt OpenSSL::Crypto Threads::Threads)

# Test support: a driver for nodes that exist only in the control plane, for the services' unit
# tests that run without agents.
carve_library(carve_nodes_testing
  SRCS ${nd}/testing/simulated_node_driver.cc
  DEPS carve_nodes fmt::fmt)

carve_test(nodes_test
  SRCS ${nd}/node_registry_test.cc ${nd}/node_claims_test.cc ${nd}/node_pool_test.cc
       ${nd}/node_identity_test.cc
  DEPS carve_nodes)
