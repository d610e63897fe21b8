# The node agent (src/agent/node/): ControlPlane (+ HttpControlPlane), GPU applier, workload
# manager and the Agent's threads; `carve agent` and `carve server`'s embedded agents use it.
set(node_dir ${CMAKE_CURRENT_SOURCE_DIR}/node)
carve_library(carve_agent
  SRCS ${node_dir}/agent.cc ${node_dir}/agent_loops.cc ${node_dir}/backoff.cc
       ${node_dir}/busy_rate.cc ${node_dir}/control_plane.cc ${node_dir}/fence.cc ${node_dir}/node_credential.cc ${node_dir}/gpu_applier.cc ${node_dir}/node_identity.cc
       ${node_dir}/share_guard.cc ${node_dir}/workload_command.cc ${node_dir}/workload_manager.cc ${node_dir}/workload_devices.cc
       ${node_dir}/workload_sandbox.cc
  DEPS carve_mig carve_fake_nvml carve_launch carve_mps carve_protocol carve_launch_inputs
       carve_catalog yaml-cpp
       PkgConfig::HTTPLIB fmt::fmt spdlog::spdlog Threads::Threads)
carve_test(agent_node_test
  SRCS ${node_dir}/backoff_test.cc ${node_dir}/busy_rate_test.cc ${node_dir}/node_identity_test.cc
       ${node_dir}/control_plane_test.cc ${node_dir}/fence_test.cc ${node_dir}/gpu_applier_test.cc
       ${node_dir}/workload_command_test.cc ${node_dir}/workload_manager_test.cc
       ${node_dir}/workload_share_test.cc ${node_dir}/workload_adoption_test.cc
       ${node_dir}/workload_sandbox_test.cc ${node_dir}/node_credential_test.cc
       ${node_dir}/share_guard_test.cc ${node_dir}/agent_test.cc
  DEPS carve_agent)
# Interposer shares run under the real libcarve-mgpu.so, with the probe over the fake libcuda.
add_dependencies(agent_node_test carve-mgpu mgpu_probe)
target_compile_definitions(agent_node_test PRIVATE
  CARVE_MGPU_LIB_PATH="$<TARGET_FILE:carve-mgpu>" CARVE_MGPU_PROBE_PATH="$<TARGET_FILE:mgpu_probe>")

# `carve fleet-sim`: N simulated agents on one event loop, through the agent's own protocol code.
set(fleetsim_dir ${CMAKE_CURRENT_SOURCE_DIR}/fleetsim)
carve_library(carve_fleetsim
  SRCS ${fleetsim_dir}/fleet_sim.cc
  DEPS carve_agent carve_http carve_protocol Boost::headers fmt::fmt Threads::Threads)
