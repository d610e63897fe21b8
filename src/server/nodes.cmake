# carve_nodes: the server side of the agent protocol (node registry, agent routes, and the
# NodeDriver that carves through agents).
set(nd ${CMAKE_CURRENT_SOURCE_DIR}/nodes)
carve_library(carve_nodes
  SRCS ${nd}/node_registry.cc ${nd}/agent_node_driver.cc ${nd}/agent_routes.cc
  DEPS carve_protocol carve_server_infra carve_catalog carve_layout carve_store
       nlohmann_json::nlohmann_json spdlog::spdlog fmt::fmt OpenSSL::Crypto Threads::Threads)

carve_test(nodes_test SRCS ${nd}/node_registry_test.cc DEPS carve_nodes)
