# carve_sagemaker: the SageMaker control-plane service (awsJson1_1 codec, validation, the
# operations, lifecycle reconciler) and the fleet it places onto (node driver, simulated nodes).
set(sm ${CMAKE_CURRENT_SOURCE_DIR}/sagemaker)
set(fl ${CMAKE_CURRENT_SOURCE_DIR}/fleet)
carve_library(carve_sagemaker
  SRCS ${sm}/validator.cc ${sm}/aws_error.cc ${sm}/resources.cc ${sm}/variant.cc
       ${sm}/endpoint_record.cc ${sm}/component_record.cc ${sm}/service.cc ${sm}/list_ops.cc
       ${sm}/model_ops.cc ${sm}/endpoint_config_ops.cc ${sm}/endpoint_ops.cc
       ${sm}/component_ops.cc ${sm}/tag_ops.cc ${sm}/reconcile.cc ${sm}/runtimes.cc
       ${sm}/route_table.cc ${sm}/workloads.cc
       ${fl}/fleet_config.cc ${fl}/fleet.cc ${fl}/simulated_node_driver.cc
  DEPS carve_catalog carve_layout carve_store carve_nodes nlohmann_json::nlohmann_json yaml-cpp fmt::fmt
       spdlog::spdlog Threads::Threads)

carve_test(sagemaker_test
  SRCS ${sm}/validator_test.cc ${sm}/aws_error_test.cc ${sm}/service_test.cc
       ${sm}/agent_mode_test.cc
       ${fl}/fleet_config_test.cc ${fl}/fleet_test.cc
  DEPS carve_sagemaker)
