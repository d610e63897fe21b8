#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets (Clang, ASan + UBSan, the tree instrumented for
# coverage) in build-fuzz and runs each in turn, one at a time, for FUZZ_SECONDS seconds or
# FUZZ_RUNS executions, whichever comes first.
#
#   FUZZ_SECONDS=60 FUZZ_RUNS=0 FUZZ_TARGETS="sigv4 layout" scripts/fuzz.sh
#
# Each target starts from its committed seeds (fuzz/corpus/<target>) and a working corpus in
# build-fuzz/corpus/<target> that keeps what earlier runs found. A crash, a hang (-timeout), a
# leak or a failed property stops that target and leaves the input in
# build-fuzz/artifacts/<target>/; fix it, then add the input to fuzz/corpus/<target>/ so that
# `make test` replays it forever. The figures of each run are appended to build-fuzz/fuzz-stats.
# Extra CMake flags come from $CMAKE_FLAGS.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
runs=${FUZZ_RUNS:-0}  # 0: no limit on executions
all_targets=(http_request sigv4 sagemaker mgpu_params layout fleet_yaml runtime_yaml agent_protocol
             event_stream ledger)
read -r -a targets <<<"${FUZZ_TARGETS:-${all_targets[*]}}"

if ! command -v clang++ >/dev/null; then
  echo "fuzz: libFuzzer needs clang++ (scripts/setup.sh installs it)" >&2
  exit 1
fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCARVE_SANITIZE=address,undefined -DCARVE_FUZZ=ON ${CMAKE_FLAGS:-} >/dev/null
cmake --build build-fuzz --target fuzz_targets

# Reports on stderr (the sanitizer builds otherwise write them to a directory), and a leak is a
# failure like a crash.
export ASAN_OPTIONS="log_path=stderr:detect_leaks=1"
export UBSAN_OPTIONS="log_path=stderr:print_stacktrace=1:halt_on_error=1"

status=0
for t in "${targets[@]}"; do
  work=build-fuzz/corpus/$t
  artifacts=build-fuzz/artifacts/$t
  mkdir -p "$work" "$artifacts"
  log=build-fuzz/fuzz-$t.log
  limit=-1
  [ "$runs" -gt 0 ] && limit=$runs
  echo "fuzz: $t for ${seconds} s or $limit executions (-1: no limit); log $log"
  start=$(date +%s)
  rc=0
  build-fuzz/fuzz/fuzz_"$t" -max_total_time="$seconds" -runs="$limit" -timeout=25 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$work" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  elapsed=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  echo "$(date -u +%FT%TZ) $t rc=$rc executions=${execs:-?} seconds=$elapsed" \
    | tee -a build-fuzz/fuzz-stats
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $t failed; the last lines of $log:" >&2
    tail -40 "$log" >&2
    status=1
  fi
done
exit $status
