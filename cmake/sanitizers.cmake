# Sanitizer builds: -DCARVE_SANITIZE=address,undefined (ASan + UBSan) or -DCARVE_SANITIZE=thread
# (TSan). `make sanitize` configures build-asan and build-tsan this way (scripts/sanitize.sh);
# docs/testing.md says what each runs.
#
# Every target of the tree is instrumented, shared objects included. Each executable also links
# tools/sanitizers/default_options.cc, which compiles the runtime options into the binary, so
# they hold in processes whose environment a test or the agent rebuilt from nothing (a copy the
# agent launches inherits no ASAN_OPTIONS). Those options send every report to
# <build>/sanitizer-reports/, where scripts/sanitize.sh looks after the run: a finding in a
# process whose exit status nobody checks (a copy, an agent a test kills) still fails the run.
set(CARVE_SANITIZE "" CACHE STRING "Sanitizers to build with: '' (none), 'address,undefined' or 'thread'")
set(CARVE_SANITIZER_REPORT_DIR "${CMAKE_BINARY_DIR}/sanitizer-reports")
# -DCARVE_FUZZ=ON (fuzz/CMakeLists.txt): with Clang, the whole tree is also compiled with
# libFuzzer's coverage instrumentation, so the fuzz targets see edges inside the libraries.
option(CARVE_FUZZ "Build the libFuzzer targets in fuzz/ (needs Clang)" OFF)
if(CARVE_FUZZ AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(CARVE_SANITIZE STREQUAL "")
  function(carve_sanitize_target target)
  endfunction()
  return()
endif()

if(NOT CARVE_SANITIZE MATCHES "^(address,undefined|address|undefined|thread)$")
  message(FATAL_ERROR "CARVE_SANITIZE='${CARVE_SANITIZE}': use address,undefined or thread")
endif()
message(STATUS "carve: building with -fsanitize=${CARVE_SANITIZE}; reports go to "
               "${CARVE_SANITIZER_REPORT_DIR}")
file(MAKE_DIRECTORY ${CARVE_SANITIZER_REPORT_DIR})

# -fno-sanitize-recover: undefined behaviour aborts the process (a failed test), it does not
# print and carry on. Frame pointers keep the reports' stacks whole.
add_compile_options(-fsanitize=${CARVE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
add_link_options(-fsanitize=${CARVE_SANITIZE})
if(CARVE_SANITIZE MATCHES "address")
  # libcarve-mgpu.so is instrumented like the rest; in a program not linked with ASan (the
  # /bin/sh of a queue task) the ASan runtime refuses to start unless it is loaded first, so the
  # agent lists it ahead of the interposer in LD_PRELOAD (launch::InterposerPreload).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set(asan_runtime_name libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so)
  else()
    set(asan_runtime_name libasan.so)
  endif()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${asan_runtime_name}
                  OUTPUT_VARIABLE asan_runtime OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${asan_runtime}" OR NOT EXISTS "${asan_runtime}")
    message(FATAL_ERROR "cannot find the ASan runtime (${asan_runtime_name}): got '${asan_runtime}'")
  endif()
  set(CARVE_ASAN_RUNTIME "${asan_runtime}")
endif()
if(CARVE_SANITIZE STREQUAL "thread")
  # TSan is impractically slow at -O0. GCC warns that it cannot see std::atomic_thread_fence
  # (-Wtsan); none of carve's own code relies on a bare fence for ordering.
  add_compile_options(-O1)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-tsan -Wno-maybe-uninitialized)
  endif()
endif()

add_library(carve_sanitizer_options OBJECT ${PROJECT_SOURCE_DIR}/tools/sanitizers/default_options.cc)
target_compile_definitions(carve_sanitizer_options PRIVATE
  CARVE_SANITIZER_REPORT_DIR="${CARVE_SANITIZER_REPORT_DIR}"
  CARVE_SANITIZER_SUPPRESSIONS_DIR="${PROJECT_SOURCE_DIR}/tools/sanitizers")
target_compile_options(carve_sanitizer_options PRIVATE -Wall -Wextra -Werror)

# Called by carve_warnings() for every target of the tree: executables get the options above;
# the launcher (and its test) learn where the ASan runtime is.
function(carve_sanitize_target target)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:carve_sanitizer_options>)
    # GCC links the runtime as a shared library, which finds the executable's options only if
    # the executable exports them.
    foreach(tool IN ITEMS asan lsan ubsan tsan)
      target_link_options(${target} PRIVATE -Wl,--export-dynamic-symbol=__${tool}_default_options)
    endforeach()
  endif()
  if(CARVE_ASAN_RUNTIME AND target MATCHES "^(carve_launch|launch_test)$")
    target_compile_definitions(${target} PRIVATE CARVE_ASAN_RUNTIME="${CARVE_ASAN_RUNTIME}")
  endif()
  # The interposer's shell exports dlsym, and the ASan and TSan runtimes' own initialisation
  # looks up the functions they intercept with dlsym(RTLD_NEXT, ...): that call lands in the
  # shell before the runtime is ready (ASan has no shadow memory yet, TSan no thread state), where
  # instrumented code faults. So the shell's own files are built with UBSan only, or with nothing
  # under TSan; the tested C++ core it links (carve_interposer_core) keeps the sanitizer, and the
  # library still links the runtime for it. TSan instruments every function's entry, so under it
  # the glibc floor's wrappers, which that lookup passes through, go uninstrumented too.
  if((target STREQUAL "carve-mgpu" AND CARVE_SANITIZE MATCHES "address|thread") OR
     (target STREQUAL "carve_glibc_floor" AND CARVE_SANITIZE STREQUAL "thread"))
    get_target_property(options ${target} COMPILE_OPTIONS)
    list(REMOVE_ITEM options -fsanitize=${CARVE_SANITIZE})
    if(CARVE_SANITIZE MATCHES "undefined")
      list(APPEND options -fsanitize=undefined)
    endif()
    set_property(TARGET ${target} PROPERTY COMPILE_OPTIONS ${options})
  endif()
endfunction()
