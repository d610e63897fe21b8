# Added latency per launch of libcarve-mgpu.so over a direct call into the (fake) driver.
# Run: build/bench/interposer_bench   (see docs/benchmarks.md)
add_executable(interposer_bench ${CMAKE_CURRENT_SOURCE_DIR}/interposer_bench.cc)
target_include_directories(interposer_bench PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(interposer_bench PRIVATE ${CMAKE_DL_LIBS})
target_compile_definitions(interposer_bench PRIVATE
  CARVE_MGPU_LIB="$<TARGET_FILE:carve-mgpu>"
  CARVE_FAKE_CUDA="$<TARGET_FILE:carve_fake_cuda>"
  CARVE_MGPU_LEDGER_TOOL="$<TARGET_FILE:mgpu_ledger>")
add_dependencies(interposer_bench carve-mgpu carve_fake_cuda mgpu_ledger)
carve_warnings(interposer_bench)
