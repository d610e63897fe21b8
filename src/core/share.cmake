# mGPU share rules and the parameter-text parser (no dependencies beyond carve_common).
carve_library(carve_share
  SRCS ${CMAKE_CURRENT_LIST_DIR}/share.cc ${CMAKE_CURRENT_LIST_DIR}/mgpu_params.cc
  DEPS carve_common fmt::fmt)
carve_test(share_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/share_test.cc ${CMAKE_CURRENT_LIST_DIR}/mgpu_params_test.cc
  DEPS carve_share)
