# The linker for carve's executables (docs/testing.md, "CI time"). Links are the part of a build
# the compiler cache cannot skip: CI's clean clone relinks all 54 executables twice (the ordinary
# and the ASan tree), and GNU ld took 9.6 s for `carve` and 27 s for its ASan build where
# Debian's lld takes 1.9 s and 6.3 s. Executables link with lld when it is installed.
#
# Shared objects keep the default linker: libcarve-mgpu.so's glibc floor (--wrap, version
# scripts, static libstdc++; src/interposer/floor/) is proven with GNU ld, and
# tests/gpu/device-check.sh builds it on GPU hosts with plain g++, so the library users load
# comes from the same linker everywhere.
#
# -DCARVE_EXE_LINKER=default keeps the compiler's default linker for executables too.
set(CARVE_EXE_LINKER "lld" CACHE STRING "Linker for executables: lld (when installed) or default")
if(CARVE_EXE_LINKER STREQUAL "lld")
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=lld" CARVE_HAVE_LLD)
  if(CARVE_HAVE_LLD)
    string(APPEND CMAKE_EXE_LINKER_FLAGS " -fuse-ld=lld")
    message(STATUS "carve: linking executables with lld")
  else()
    message(STATUS "carve: lld not found; executables link with the default linker")
  endif()
elseif(NOT CARVE_EXE_LINKER STREQUAL "default")
  message(FATAL_ERROR "CARVE_EXE_LINKER='${CARVE_EXE_LINKER}': use lld or default")
endif()
