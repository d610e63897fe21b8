# `carve testmodel`: a simulated model server paced by the planner's performance model.
carve_library(carve_testmodel SRCS
  testmodel/engine.cc testmodel/protocol.cc testmodel/server.cc
  DEPS carve_common carve_planner PkgConfig::HTTPLIB nlohmann_json::nlohmann_json
       Threads::Threads)
carve_test(testmodel_test
  SRCS testmodel/engine_test.cc testmodel/protocol_test.cc
  DEPS carve_testmodel)
