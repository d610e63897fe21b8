# reconcile_pass_bench: what one SageMaker reconcile pass costs at 1,250 and 5,000 nodes, and how
# many nodes' desired state it republishes, when nothing changed and when one copy did (issue 14).
#   cmake --build build --target reconcile_pass_bench
#   build/bench/reconcile_pass_bench --nodes 1250 --copies 9999 --trials 20
add_executable(reconcile_pass_bench ${CMAKE_CURRENT_LIST_DIR}/reconcile_pass_bench.cc)
target_include_directories(reconcile_pass_bench PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(reconcile_pass_bench PRIVATE carve_sagemaker)
carve_warnings(reconcile_pass_bench)
