#!/usr/bin/env bash
# `make sanitize`: the tree under AddressSanitizer + UndefinedBehaviorSanitizer (every unit,
# CLI and integration test) and under ThreadSanitizer (the concurrent suites). What each part
# covers and how long it takes: docs/testing.md.
#
#   scripts/sanitize.sh [asan|asan-build|asan-unit|ubsan-interposer|tsan|all]    (default: all)
#
# asan-build only configures and builds build-asan/ (CI times the build and the tests apart).
#
# The interposer_preload_* suites run in a UBSan-only build of its own: under ASan the interposer's
# exported dlsym hook runs inside the ASan runtime's initialisation (docs/testing.md).
#
# A part fails when a test fails or when any process wrote a sanitizer report: the builds
# compile their report path into every binary (cmake/sanitizers.cmake), so a finding in a copy
# the agent started, or in a server a test killed, counts as much as one in a unit test.
# Extra CMake flags (a compiler launcher, say) come from $CMAKE_FLAGS.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
jobs=${CTEST_JOBS:-2}
# Build directories; another name keeps a measurement's cold build apart from the usual one.
asan_dir=${ASAN_BUILD_DIR:-build-asan}
ubsan_dir=${UBSAN_BUILD_DIR:-build-ubsan}
tsan_dir=${TSAN_BUILD_DIR:-build-tsan}

# The suites with threads over shared state: SqliteStore's group commit, the HTTP front end,
# the runtime router, the agent's loops and launcher, the node registry, the queue reconciler
# and the interposer's shared ledger. A new concurrent suite is added here.
tsan_tests=(store_test store_kill_test http_test runtime_test agent_node_test
            launch_test nodes_test queues_test interposer_core_test)

configure() {  # dir sanitizers build-type
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE="$3" -DCARVE_SANITIZE="$2" ${CMAKE_FLAGS:-} \
    >/dev/null
}

# Runs ctest in $1 with the remaining arguments, then fails if any report was written.
run_checked() {
  local dir=$1
  shift
  local reports="$dir/sanitizer-reports"
  rm -rf "$reports"
  mkdir -p "$reports"
  local status=0
  (cd "$dir" && ctest --output-on-failure --no-tests=error -j "$jobs" "$@") || status=1
  if [ -n "$(ls -A "$reports")" ]; then
    echo "sanitize: $(ls "$reports" | wc -l) sanitizer report(s) in $reports:" >&2
    for f in "$reports"/*; do
      echo "==> $f <==" >&2
      cat "$f" >&2
    done
    status=1
  fi
  return $status
}

asan_build() {
  configure "$asan_dir" address,undefined Debug
  cmake --build "$asan_dir"
}

asan() {  # label filter for ctest: "" (everything but gpu) or "unit"
  asan_build
  # The preload suites run in the UBSan build below; the symbol-floor checks are about the
  # release library's dependencies, which an instrumented one (libasan, libubsan) cannot keep.
  local skip='^interposer_(preload_.*|symbol_floor_.*)$'
  if [ "$1" = unit ]; then
    run_checked "$asan_dir" -L unit -LE gpu -E "$skip"
  else
    run_checked "$asan_dir" -LE gpu -E "$skip"
  fi
}

ubsan_interposer() {
  configure "$ubsan_dir" undefined Debug
  cmake --build "$ubsan_dir" --target carve-mgpu mgpu_probe mgpu_ledger carve_fake_cuda \
    interposer_fake_nvml carve_next_a carve_next_b
  run_checked "$ubsan_dir" -R '^interposer_preload_'
}

tsan() {
  configure "$tsan_dir" thread RelWithDebInfo
  cmake --build "$tsan_dir" --target "${tsan_tests[@]}" store_crash_driver
  local regex
  regex="^($(IFS='|'; echo "${tsan_tests[*]}"))\$"
  run_checked "$tsan_dir" -R "$regex"
}

case "$what" in
  asan) asan all ;;
  asan-build) asan_build ;;
  asan-unit) asan unit ;;
  ubsan-interposer) ubsan_interposer ;;
  tsan) tsan ;;
  all)
    status=0
    asan all || status=1
    ubsan_interposer || status=1
    tsan || status=1
    exit $status
    ;;
  *)
    echo "usage: $0 [asan|asan-build|asan-unit|ubsan-interposer|tsan|all]" >&2
    exit 2
    ;;
esac
