# carve_sagemaker: the SageMaker control-plane service. The awsJson1_1 codec and validation, the
# operation handlers (ops.h, one .cc per resource), and the reconciler's three parts: endpoint
# lifecycle, component placement (on the nodes' pools) and workload publishing.
set(sm ${CMAKE_CURRENT_SOURCE_DIR}/sagemaker)
carve_library(carve_sagemaker
  SRCS ${sm}/aws_error.cc ${sm}/resources.cc ${sm}/variant.cc
       ${sm}/inference_ami.cc
       ${sm}/statuses.cc ${sm}/endpoint_record.cc ${sm}/component_record.cc ${sm}/copy_record.cc
       ${sm}/deployment.cc
       ${sm}/op_context.cc ${sm}/list_ops.cc ${sm}/model_ops.cc ${sm}/endpoint_config_ops.cc
       ${sm}/endpoint_ops.cc ${sm}/component_ops.cc ${sm}/tag_ops.cc
       ${sm}/endpoint_lifecycle.cc ${sm}/component_placement.cc ${sm}/component_reconcile.cc
       ${sm}/component_plan.cc
       ${sm}/component_rollout.cc
       ${sm}/workload_publisher.cc ${sm}/runtimes.cc ${sm}/route_table.cc
       ${sm}/service.cc ${sm}/service_views.cc
  DEPS carve_aws carve_catalog carve_layout carve_placement carve_store carve_nodes carve_http carve_reconciler
       carve_launch_inputs
       nlohmann_json::nlohmann_json yaml-cpp fmt::fmt spdlog::spdlog Threads::Threads)

carve_test(sagemaker_test
  SRCS ${sm}/name_rules_test.cc ${sm}/aws_error_test.cc ${sm}/statuses_test.cc
       ${sm}/service_test.cc ${sm}/agent_mode_test.cc ${sm}/component_placement_test.cc
       ${sm}/component_plan_test.cc
       ${sm}/migration_test.cc ${sm}/endpoint_lifecycle_test.cc ${sm}/workload_publisher_test.cc
       ${sm}/ops_test.cc ${sm}/deployment_test.cc ${sm}/rolling_update_test.cc
       ${sm}/runtimes_test.cc ${sm}/refused_members_test.cc
  DEPS carve_sagemaker carve_nodes_testing)
target_compile_definitions(sagemaker_test PRIVATE
  CARVE_STORE_V1_FIXTURE="${PROJECT_SOURCE_DIR}/tests/fixtures/store_v1.sql")
