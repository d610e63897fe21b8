# One helper pair so every target in the tree looks alike:
#   carve_library(NAME SRCS ... DEPS ...)   static library rooted at src/
#   carve_test(NAME SRCS ... DEPS ... [LABELS ...])   GoogleTest binary registered with CTest

function(carve_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
  # GCC 12 at -O2 reports -Wmaybe-uninitialized inside std::variant's storage when a
  # Result<std::vector<...>> temporary is iterated (GCC bug 105593 and relatives): a false
  # positive in libstdc++ code, not ours. Clang and GCC -O0 build with the warning on.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT CMAKE_BUILD_TYPE STREQUAL "Debug")
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
  carve_sanitize_target(${target})  # cmake/sanitizers.cmake; nothing in a normal build
endfunction()

function(carve_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  carve_warnings(${name})
endfunction()

function(carve_test name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  carve_warnings(${name})
  add_test(NAME ${name} COMMAND ${name})
  set(labels unit ${ARG_LABELS})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT 300)
endfunction()

# Makes every test added so far in the calling directory require the fixture `carve_processes`
# (the top-level CMakeLists.txt: no process may outlive the suites).
function(carve_require_process_check)
  get_property(dir_tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS dir_tests)
    set_property(TEST ${t} APPEND PROPERTY FIXTURES_REQUIRED carve_processes)
  endforeach()
endfunction()
