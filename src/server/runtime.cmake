# The SageMaker runtime API (InvokeEndpoint, InvokeEndpointWithResponseStream):
#   carve_event_stream  AWS event-stream framing (also used by the load generator)
#   carve_runtime       router: copy selection, proxying, error mapping, streaming relay
set(rt ${CMAKE_CURRENT_SOURCE_DIR}/runtime)
find_package(ZLIB REQUIRED)
carve_library(carve_event_stream
  SRCS ${rt}/event_stream.cc
  DEPS carve_common ZLIB::ZLIB)

carve_test(event_stream_test
  SRCS ${rt}/event_stream_test.cc
  DEPS carve_event_stream ZLIB::ZLIB)

carve_library(carve_runtime
  SRCS ${rt}/copy_balancer.cc ${rt}/copy_client.cc ${rt}/runtime_error.cc ${rt}/stream_relay.cc
       ${rt}/router.cc ${rt}/router_stream.cc
  DEPS carve_event_stream carve_server_infra nlohmann_json::nlohmann_json
       Threads::Threads)

carve_test(runtime_test
  SRCS ${rt}/copy_balancer_test.cc ${rt}/copy_client_test.cc ${rt}/stream_relay_test.cc
       ${rt}/router_test.cc
       ${rt}/router_stream_test.cc ${rt}/routes_test.cc
  DEPS carve_runtime PkgConfig::HTTPLIB)
target_compile_definitions(runtime_test PRIVATE CARVE_RUNTIME_SRC_DIR="${rt}")
