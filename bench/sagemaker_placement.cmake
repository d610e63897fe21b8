# sagemaker_placement_bench: copies placed per second on the SageMaker path (issue 13).
#   cmake --build build --target sagemaker_placement_bench && taskset -c 1 build/bench/sagemaker_placement_bench
add_executable(sagemaker_placement_bench ${CMAKE_CURRENT_LIST_DIR}/sagemaker_placement_bench.cc)
target_include_directories(sagemaker_placement_bench PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(sagemaker_placement_bench PRIVATE carve_nodes benchmark::benchmark
                                                        benchmark::benchmark_main)
carve_warnings(sagemaker_placement_bench)
