# MIG layout engine: rules, interval search, validation, incremental placement, enumeration.
carve_library(carve_layout
  SRCS layout_rules.cc layout_search.cc layout_validator.cc layout_placer.cc layout_enumerator.cc
       layout_units.cc
  DEPS carve_catalog fmt::fmt)

set(layout_test_srcs layout_rules_test.cc layout_search_test.cc layout_validator_test.cc
                     layout_placer_test.cc layout_enumerator_test.cc
                     layout_catalog_test.cc layout_units_test.cc)
carve_test(layout_test SRCS ${layout_test_srcs} DEPS carve_layout)
