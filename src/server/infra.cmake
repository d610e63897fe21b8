# carve_reconciler: the loop every controller's reconcile pass runs on.
carve_library(carve_reconciler
  SRCS ${CMAKE_CURRENT_SOURCE_DIR}/reconciler_loop.cc
  DEPS carve_common spdlog::spdlog Threads::Threads)

carve_test(reconciler_loop_test
  SRCS ${CMAKE_CURRENT_SOURCE_DIR}/reconciler_loop_test.cc
  DEPS carve_reconciler)
