# The NVML seam (src/agent/nvml/):
#   carve_nvml         Nvml interface, NVML C ABI subset, error mapping, LibNvml (dlopen).
#   carve_fake_nvml    FakeNvmlCore (MIG rules on catalog geometry), FakeNvml, config parser.
#   carve_fake_libnvml the fake as a C-ABI libnvidia-ml.so.1 in <build>/fake-nvml/, loadable by
#                      path so tests run LibNvml's real dlopen path.
set(nvml_dir ${CMAKE_CURRENT_SOURCE_DIR}/nvml)
carve_library(carve_nvml
  SRCS ${nvml_dir}/nvml_error.cc ${nvml_dir}/lib_nvml.cc
  DEPS carve_common fmt::fmt ${CMAKE_DL_LIBS})
carve_library(carve_fake_nvml
  SRCS ${nvml_dir}/fake_node_config.cc ${nvml_dir}/fake_nvml_core.cc ${nvml_dir}/fake_nvml.cc
  DEPS carve_nvml carve_catalog fmt::fmt)

add_library(carve_fake_libnvml SHARED ${nvml_dir}/fake_libnvml.cc)
target_link_libraries(carve_fake_libnvml PRIVATE carve_fake_nvml)
target_link_options(carve_fake_libnvml PRIVATE
  -Wl,--version-script=${nvml_dir}/fake_libnvml.map -Wl,--no-undefined)
set_target_properties(carve_fake_libnvml PROPERTIES
  OUTPUT_NAME nvidia-ml PREFIX lib SUFFIX .so.1
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake-nvml
  LINK_DEPENDS ${nvml_dir}/fake_libnvml.map)
carve_warnings(carve_fake_libnvml)

carve_test(nvml_test
  SRCS ${nvml_dir}/nvml_error_test.cc ${nvml_dir}/fake_node_config_test.cc
       ${nvml_dir}/fake_nvml_test.cc
  DEPS carve_fake_nvml)
# Runs LibNvml against the fake library by path: the same dlopen/dlsym code real hosts use.
carve_test(lib_nvml_test SRCS ${nvml_dir}/lib_nvml_test.cc DEPS carve_nvml)
add_dependencies(lib_nvml_test carve_fake_libnvml)
target_compile_definitions(lib_nvml_test PRIVATE
  CARVE_FAKE_LIBNVML_PATH="$<TARGET_FILE:carve_fake_libnvml>")
