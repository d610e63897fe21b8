# The compiler cache (docs/testing.md, "CI time"). Every build of the tree compiles through
# Debian's ccache when it is installed: the ordinary build, the sanitizer builds, the mutation
# check's scratch tree and CI's clean clone, which runs on the same machine right after the
# developer's own build of the same sources.
#
# The cache is keyed on content, not on where the checkout lies:
#   CCACHE_BASEDIR    rewrites absolute paths under this checkout into paths relative to the
#                     compiler's working directory, in the command line ccache hashes and runs;
#   CCACHE_NOHASHDIR  leaves the working directory out of the hash, which is safe only because
#   -fdebug-prefix-map   writes the checkout as "." into the debug info, so no object names the
#                     directory it was first compiled in. gdb finds the sources from the
#                     checkout's root, or with `directory <checkout>`.
# A define that carries an absolute path (the sanitizer report directory) still names the
# checkout, so those few objects miss in another directory and stay correct.
# CCACHE_MAXSIZE bounds the cache (ccache evicts the least recently used files); CARVE_CCACHE=OFF
# or an explicit CMAKE_CXX_COMPILER_LAUNCHER turns this off.
option(CARVE_CCACHE "Compile through ccache when it is installed" ON)
set(CARVE_CCACHE_MAXSIZE "8G" CACHE STRING "Size bound of the compiler cache")
find_program(CARVE_CCACHE_PROGRAM ccache)
if(CARVE_CCACHE AND CARVE_CCACHE_PROGRAM AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1
               CCACHE_MAXSIZE=${CARVE_CCACHE_MAXSIZE} ${CARVE_CCACHE_PROGRAM})
  set(CMAKE_C_COMPILER_LAUNCHER ${launcher})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${launcher})
  add_compile_options(-fdebug-prefix-map=${PROJECT_SOURCE_DIR}=.)
  message(STATUS "carve: compiling through ${CARVE_CCACHE_PROGRAM} (base_dir ${PROJECT_SOURCE_DIR})")
endif()
