# store_bench: acknowledged durable writes per second (SqliteStore, WAL + synchronous=FULL,
# group commit) for 1, 16 and 64 concurrent clients. See docs/benchmarks.md.
if(TARGET carve_store)
  add_executable(store_bench ${CMAKE_CURRENT_LIST_DIR}/store_bench.cc)
  target_link_libraries(store_bench PRIVATE carve_store)
  carve_warnings(store_bench)
endif()
