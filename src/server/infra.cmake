# carve_server_infra: HTTP front end, SigV4 verification, credentials file, Prometheus metrics.
set(infra_dir ${CMAKE_CURRENT_SOURCE_DIR})
carve_library(carve_server_infra
  SRCS ${infra_dir}/http_server.cc ${infra_dir}/sigv4.cc ${infra_dir}/credentials.cc
       ${infra_dir}/metrics.cc
  DEPS carve_common PkgConfig::HTTPLIB OpenSSL::Crypto nlohmann_json::nlohmann_json
       spdlog::spdlog fmt::fmt Threads::Threads)

carve_test(server_infra_test
  SRCS ${infra_dir}/sigv4_test.cc ${infra_dir}/credentials_test.cc ${infra_dir}/metrics_test.cc
       ${infra_dir}/http_server_test.cc
  DEPS carve_server_infra)
