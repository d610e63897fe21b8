# MIG on the node (src/agent/mig/): discovery + catalog cross-check, the Carver, and the
# read-only probe tests/gpu/run.sh runs on real GPU hosts.
#   carve_mig          Discovery, CrossCheck, Carver, ProbeReport.
#   carve-nvml-probe   read-only NVML inventory/profiles/placements as JSON.
set(mig_dir ${CMAKE_CURRENT_SOURCE_DIR}/mig)
carve_library(carve_mig
  SRCS ${mig_dir}/discovery.cc ${mig_dir}/catalog_check.cc ${mig_dir}/carver.cc
       ${mig_dir}/probe_report.cc
  DEPS carve_nvml carve_catalog fmt::fmt spdlog::spdlog nlohmann_json::nlohmann_json)

add_executable(carve-nvml-probe ${mig_dir}/nvml_probe_main.cc)
target_link_libraries(carve-nvml-probe PRIVATE carve_mig)
set_target_properties(carve-nvml-probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
carve_warnings(carve-nvml-probe)

carve_test(mig_test
  SRCS ${mig_dir}/carver_test.cc ${mig_dir}/discovery_test.cc ${mig_dir}/catalog_check_test.cc
       ${mig_dir}/probe_report_test.cc
  DEPS carve_mig carve_fake_nvml)
# Discovery, carving and a lost device through LibNvml's dlopen path and the fake library.
carve_test(mig_dlopen_test SRCS ${mig_dir}/mig_dlopen_test.cc DEPS carve_mig)
# The interposer's fake NVML has only the two memory queries: an NVML that lacks entry points.
add_dependencies(mig_dlopen_test carve_fake_libnvml carve-nvml-probe interposer_fake_nvml)
target_compile_definitions(mig_dlopen_test PRIVATE
  CARVE_FAKE_LIBNVML_PATH="$<TARGET_FILE:carve_fake_libnvml>"
  CARVE_INTERPOSER_FAKE_NVML_PATH="$<TARGET_FILE:interposer_fake_nvml>"
  CARVE_NVML_PROBE_PATH="$<TARGET_FILE:carve-nvml-probe>")

# Real hardware only (label gpu, excluded from `make test`): the read-only probe on this host.
add_test(NAME gpu_nvml_probe COMMAND bash ${PROJECT_SOURCE_DIR}/tests/gpu/run.sh
         --build-dir ${CMAKE_BINARY_DIR})
set_tests_properties(gpu_nvml_probe PROPERTIES LABELS gpu TIMEOUT 900)
