# carve_autoscaling: Application Auto Scaling's API (AnyScaleFrontendService) over inference
# components and variants, in parts (autoscaling_service.h lists them): the operations, one file
# per resource; the typed policy spec; the datapoints; each policy kind's decision; the activity
# log; and the engine that samples the router's signals on a ReconcilerLoop and combines them.
set(as ${CMAKE_CURRENT_SOURCE_DIR}/autoscaling)
carve_library(carve_autoscaling
  SRCS ${as}/scaling_records.cc ${as}/policy_spec.cc ${as}/datapoints.cc
       ${as}/policy_decisions.cc ${as}/activity_log.cc ${as}/ops.cc ${as}/target_ops.cc
       ${as}/policy_ops.cc ${as}/scheduled_ops.cc ${as}/autoscaling_service.cc
       ${as}/scaling_engine.cc
  DEPS carve_aws carve_runtime carve_reconciler carve_store nlohmann_json::nlohmann_json fmt::fmt
       spdlog::spdlog Threads::Threads)

carve_test(autoscaling_test
  SRCS ${as}/scaling_records_test.cc ${as}/autoscaling_service_test.cc ${as}/scaling_engine_test.cc
       ${as}/policy_spec_test.cc ${as}/datapoints_test.cc ${as}/policy_decisions_test.cc
       ${as}/activity_log_test.cc
  DEPS carve_autoscaling)
