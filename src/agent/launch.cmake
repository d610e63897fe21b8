# Workloads as processes: launcher (fork/exec into its own process group), supervision with
# restart backoff, readiness on /ping, log capture, pid files for adoption after an agent restart,
# device binding (MIG / mGPU interposer / MPS) cgroup host limits, and
# the tenant sandbox (setpriv + bubblewrap, per-account uids, iptables rules on their ports).
carve_library(carve_launch SRCS
  launch/process_launcher.cc launch/supervisor.cc launch/health.cc launch/workload_logs.cc
  launch/pid_file.cc launch/device_binding.cc launch/cgroup.cc launch/workload_spec.cc
  launch/sandbox.cc launch/sandbox_uids.cc launch/port_guard.cc
  DEPS carve_common carve_mps carve_interposer_core PkgConfig::HTTPLIB
       nlohmann_json::nlohmann_json spdlog::spdlog Threads::Threads)
carve_test(launch_test
  SRCS launch/process_launcher_test.cc launch/supervisor_test.cc launch/health_test.cc
       launch/workload_logs_test.cc launch/pid_file_test.cc launch/device_binding_test.cc
       launch/cgroup_test.cc launch/workload_spec_test.cc
       launch/sandbox_test.cc launch/sandbox_uids_test.cc launch/port_guard_test.cc
  DEPS carve_launch)
