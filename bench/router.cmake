# Router-overhead benchmark (bench/router_overhead.sh): a closed-loop HTTP load generator and the
# runtime router alone in front of one copy. Figures in docs/benchmarks.md.
if(TARGET carve_runtime)
  add_executable(http_load ${CMAKE_CURRENT_LIST_DIR}/http_load.cc)
  target_link_libraries(http_load PRIVATE carve_http CLI11::CLI11 PkgConfig::HTTPLIB
                                          nlohmann_json::nlohmann_json Threads::Threads)
  carve_warnings(http_load)
  add_executable(router_harness ${CMAKE_CURRENT_LIST_DIR}/router_harness.cc)
  target_link_libraries(router_harness PRIVATE carve_runtime CLI11::CLI11)
  carve_warnings(router_harness)
endif()
