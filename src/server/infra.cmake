# carve_server_infra: the HTTP front end (SigV4-verified through carve_aws), the native routes'
# replies, Prometheus metrics, and the reconciler loop every controller runs on.
set(infra_dir ${CMAKE_CURRENT_SOURCE_DIR})
carve_library(carve_server_infra
  SRCS ${infra_dir}/http_server.cc ${infra_dir}/http_connection.cc ${infra_dir}/fd_stream.cc
       ${infra_dir}/metrics.cc
       ${infra_dir}/native_reply.cc ${infra_dir}/reconciler_loop.cc ${infra_dir}/principals.cc
       ${infra_dir}/authenticator.cc ${infra_dir}/tls_context.cc ${infra_dir}/tls_stream.cc
  DEPS carve_common carve_json carve_aws carve_protocol Boost::headers OpenSSL::SSL OpenSSL::Crypto
       nlohmann_json::nlohmann_json
       spdlog::spdlog fmt::fmt Threads::Threads)

carve_test(server_infra_test
  SRCS ${infra_dir}/metrics_test.cc ${infra_dir}/signed_client_test.cc
       ${infra_dir}/reconciler_loop_test.cc ${infra_dir}/native_reply_test.cc
       ${infra_dir}/http_limits_test.cc
       ${infra_dir}/http_server_test.cc ${infra_dir}/fd_stream_test.cc ${infra_dir}/tls_test.cc
  DEPS carve_server_infra carve_protocol PkgConfig::HTTPLIB OpenSSL::SSL OpenSSL::Crypto)
