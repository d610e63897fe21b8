# placement_bench: decisions/s, p99 latency and packing quality of the placement engine.
#   cmake -S . -B build-rel -G Ninja -DCMAKE_BUILD_TYPE=Release
#   cmake --build build-rel --target placement_bench && taskset -c 0 build-rel/bench/placement_bench
add_executable(placement_bench ${CMAKE_CURRENT_LIST_DIR}/placement_bench.cc)
target_include_directories(placement_bench PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(placement_bench PRIVATE carve_placement benchmark::benchmark
                                              benchmark::benchmark_main)
carve_warnings(placement_bench)
