# The SageMaker runtime API (InvokeEndpoint, InvokeEndpointWithResponseStream):
#   carve_runtime       router: copy selection, proxying, error mapping, streaming relay
set(rt ${CMAKE_CURRENT_SOURCE_DIR}/runtime)
find_package(ZLIB REQUIRED)
carve_library(carve_runtime
  SRCS ${rt}/copy_balancer.cc ${rt}/copy_client.cc ${rt}/runtime_error.cc ${rt}/stream_relay.cc
       ${rt}/router.cc ${rt}/router_stream.cc ${rt}/router_openai.cc
       ${rt}/invocation_stats.cc ${rt}/bearer_revocations.cc ${rt}/token_routes.cc
  DEPS carve_aws carve_server_infra carve_store carve_json nlohmann_json::nlohmann_json
       spdlog::spdlog Threads::Threads)

carve_test(runtime_test
  SRCS ${rt}/copy_balancer_test.cc ${rt}/copy_client_test.cc ${rt}/stream_relay_test.cc
       ${rt}/router_test.cc
       ${rt}/router_stream_test.cc ${rt}/routes_test.cc ${rt}/bearer_revocations_test.cc
       ${rt}/token_routes_test.cc
  DEPS carve_runtime PkgConfig::HTTPLIB)
target_compile_definitions(runtime_test PRIVATE CARVE_RUNTIME_SRC_DIR="${rt}")
