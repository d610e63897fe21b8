# carve_autoscaling: Application Auto Scaling's API (AnyScaleFrontendService) over inference
# components and variants, its records, and the engine that samples the router's signals and
# applies target-tracking, step-scaling and scheduled actions.
set(as ${CMAKE_CURRENT_SOURCE_DIR}/autoscaling)
carve_library(carve_autoscaling
  SRCS ${as}/scaling_records.cc ${as}/autoscaling_ops.cc ${as}/scaling_engine.cc
  DEPS carve_aws carve_runtime carve_store nlohmann_json::nlohmann_json fmt::fmt
       spdlog::spdlog Threads::Threads)

carve_test(autoscaling_test
  SRCS ${as}/scaling_records_test.cc ${as}/autoscaling_service_test.cc ${as}/scaling_engine_test.cc
  DEPS carve_autoscaling)
