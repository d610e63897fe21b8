# Fleet model, placement engine and fragmentation metric.
carve_library(carve_placement
  SRCS ${CMAKE_CURRENT_LIST_DIR}/fleet.cc ${CMAKE_CURRENT_LIST_DIR}/placement.cc
       ${CMAKE_CURRENT_LIST_DIR}/allocations.cc ${CMAKE_CURRENT_LIST_DIR}/fragmentation.cc
       ${CMAKE_CURRENT_LIST_DIR}/fleet_builders.cc
  DEPS carve_share carve_catalog fmt::fmt)
carve_test(placement_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/placement_test.cc ${CMAKE_CURRENT_LIST_DIR}/fragmentation_test.cc
       ${CMAKE_CURRENT_LIST_DIR}/score_buckets_test.cc
       ${CMAKE_CURRENT_LIST_DIR}/placement_invariants_test.cc
       ${CMAKE_CURRENT_LIST_DIR}/adopt_test.cc
  DEPS carve_placement)
