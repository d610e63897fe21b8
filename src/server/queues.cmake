# carve_queues: mGPU queues and jobs (issue 7): queue and job records, request parsing and share
# planning, placement on the queue's cards, the QueueService reconciler, the /v1/queues routes and
# the queue gauges; the Ray runtimes (ray:) and RayServe's Serve config and status.
set(qd ${CMAKE_CURRENT_SOURCE_DIR}/queues)
carve_library(carve_queues
  SRCS ${qd}/queue_model.cc ${qd}/queue_request.cc ${qd}/queue_cards.cc ${qd}/gpu_view.cc
       ${qd}/queue_service.cc ${qd}/queue_reconcile.cc ${qd}/queue_view.cc ${qd}/queue_routes.cc
       ${qd}/ray_runtime.cc ${qd}/serve_config.cc ${qd}/task_workload.cc
  DEPS carve_nodes carve_protocol carve_launch_inputs carve_placement carve_share carve_store
       carve_http carve_reconciler
       yaml-cpp nlohmann_json::nlohmann_json fmt::fmt spdlog::spdlog Threads::Threads)

carve_test(queues_test
  SRCS ${qd}/queue_request_test.cc ${qd}/queue_cards_test.cc ${qd}/queue_service_test.cc ${qd}/queue_ray_test.cc
       ${qd}/queue_routes_test.cc ${qd}/ray_runtime_test.cc ${qd}/serve_config_test.cc
       ${qd}/task_workload_test.cc
  DEPS carve_queues)
