# SigV4 verification per request (bench/sigv4_bench.cc). Figures in docs/benchmarks.md.
if(TARGET carve_http)
  add_executable(sigv4_bench ${CMAKE_CURRENT_LIST_DIR}/sigv4_bench.cc)
  target_link_libraries(sigv4_bench PRIVATE carve_http benchmark::benchmark)
  carve_warnings(sigv4_bench)
endif()
