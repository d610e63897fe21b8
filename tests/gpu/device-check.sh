#!/usr/bin/env bash
# What a lent GPU runs to prove or disprove carve's hardware claims in one short pass (under five
# minutes on an H200). It builds everything it needs from the sources with plain g++ and nvcc,
# never depends on a build tree, and never changes the GPU's settings: no MIG mode change, no
# instance created or destroyed, no persistence mode, clocks or MPS. docs/gpu-validation.md says
# what each part proves and what it cannot.
#
#   tests/gpu/device-check.sh [--out DIR] [--nvml-library PATH] [--probe PATH] [--work DIR]
#                             [--build-only]
#     --out DIR           where device-check.json and device-check.txt go (default: $OUT, else
#                         ./device-check-out)
#     --nvml-library P    the NVML carve-nvml-probe loads (default libnvidia-ml.so.1); the fake one
#                         with CARVE_FAKE_NVML_CONFIG tries the NVML parts without a GPU
#     --probe PATH        use this carve-nvml-probe instead of building one
#     --work DIR          build and scratch directory (default: a fresh one under /tmp)
#     --build-only        build libcarve-mgpu.so and mgpu_ledger into --work and check the
#                         library's symbol floor, whether or not there is a GPU (how make test
#                         proves this script's build), then report; nothing else runs
# Environment: CXX (default g++, through ccache when installed), NVCC (default nvcc on PATH, else
# /usr/local/cuda/bin/nvcc), CARVE_GPU_DEPS (a directory whose include/ holds fmt, spdlog and
# nlohmann for the probe, made by tests/gpu/pack-deps.sh; default <repo>/.gpu-deps).
#
# Each part prints PASS, FAIL or SKIPPED with its figure or reason. Exit status: 1 when any part
# failed, else 0 (also when every part was skipped: a host without a GPU).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT_DIR="${OUT:-$PWD/device-check-out}"
NVML_LIBRARY="libnvidia-ml.so.1"
PROBE=""
WORK=""
BUILD_ONLY=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT_DIR="$2"; shift 2 ;;
    --nvml-library) NVML_LIBRARY="$2"; shift 2 ;;
    --probe) PROBE="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --build-only) BUILD_ONLY=1; shift ;;
    *) echo "usage: $0 [--out DIR] [--nvml-library PATH] [--probe PATH] [--work DIR]" \
         "[--build-only]" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT_DIR"
if [[ -z "$WORK" ]]; then
  WORK="$(mktemp -d /tmp/carve-device-check-XXXXXX)"
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"
RESULTS="$WORK/results.tsv"
: >"$RESULTS"
START="$(date -u +%FT%TZ)"
QUOTA=$((1 << 30))  # the memory parts' quota: 1 GiB

# record PART STATUS DETAIL: STATUS is PASS, FAIL or SKIPPED; DETAIL the figure or the reason.
record() {
  printf '%s\t%s\t%s\n' "$1" "$2" "${3//$'\t'/ }" >>"$RESULTS"
  printf '%-24s %-8s %s\n' "$1" "$2" "$3"
}
have() { command -v "$1" >/dev/null 2>&1; }

# ---- the driver and MIG mode, first -------------------------------------------------------
echo "== carve device check on $(hostname) at $START"
GPU_PRESENT=0
DRIVER="none"
MIG_MODES="unknown"
if have nvidia-smi && nvidia-smi -L >"$WORK/gpus.txt" 2>&1; then
  GPU_PRESENT=1
  DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  MIG_MODES="$(nvidia-smi --query-gpu=index,mig.mode.current,mig.mode.pending --format=csv,noheader |
    tr '\n' ';')"
  echo "driver: $DRIVER"
  echo "MIG mode (index, current, pending): $MIG_MODES"
  cat "$WORK/gpus.txt"
else
  echo "driver: none (nvidia-smi is missing or lists no GPU)"
  echo "MIG mode: unknown"
fi

# ---- builds ---------------------------------------------------------------------------------
CXX="${CXX:-g++}"
if [[ "$CXX" == g++ ]] && have ccache; then CXX="ccache g++"; fi
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
NPROC="$(nproc 2>/dev/null || echo 4)"
LIB="$WORK/libcarve-mgpu.so"
LEDGER_TOOL="$WORK/mgpu_ledger"
WORKLOAD="$WORK/device_check"
NO_GPU_REASON="no GPU: nvidia-smi is missing or lists no GPU"

# compile_all OUTDIR FLAGS... -- SOURCES...: <dir>_<file>.o per source, NPROC at a time.
compile_all() {
  local out="$1"; shift
  local flags=()
  while [[ "$1" != "--" ]]; do flags+=("$1"); shift; done
  shift
  mkdir -p "$out"
  local pids=() failed=0
  for src in "$@"; do
    # shellcheck disable=SC2086
    $CXX "${flags[@]}" -c "$src" -o "$out/$(basename "$(dirname "$src")")_$(basename "$src").o" &
    pids+=($!)
    if ((${#pids[@]} >= NPROC)); then
      wait "${pids[0]}" || failed=1
      pids=("${pids[@]:1}")
    fi
  done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  return $failed
}

build_interposer() {
  local obj="$WORK/obj-interposer" flags=(-std=c++20 -O2 -fPIC -fvisibility=hidden
    -fvisibility-inlines-hidden -ffunction-sections -fdata-sections "-I$ROOT/src")
  local core=() common=() shell=()
  for f in "$ROOT"/src/interposer/*.cc; do
    [[ "$f" == *_test.cc || "$f" == */cuda_abi_check.cc ]] || core+=("$f")
  done
  # carve_common's sources; base64.cc is its own library (OpenSSL), which the interposer omits.
  for f in "$ROOT"/src/common/*.cc; do
    [[ "$f" == *_test.cc || "$f" == */base64.cc ]] || common+=("$f")
  done
  shell=("$ROOT"/src/interposer/shell/*.cc "$ROOT/src/interposer/floor/glibc_floor.cc")
  compile_all "$obj" "${flags[@]}" -- "${core[@]}" "${common[@]}" "${shell[@]}" \
    "$ROOT/src/interposer/testing/mgpu_ledger.cc" >"$WORK/build-interposer.log" 2>&1 || return 1
  local wraps=()
  while read -r name; do [[ -n "$name" ]] && wraps+=("-Wl,--wrap=$name"); done \
    <"$ROOT/src/interposer/floor/wraps.txt"
  local lib_objs=() tool_objs=()
  for o in "$obj"/*.o; do
    case "$(basename "$o")" in
      testing_mgpu_ledger.cc.o) ;;
      shell_*|floor_*) lib_objs+=("$o") ;;
      *) lib_objs+=("$o"); tool_objs+=("$o") ;;
    esac
  done
  $CXX -shared -o "$LIB" "${lib_objs[@]}" "-Wl,--version-script=$ROOT/src/interposer/mgpu.map" \
    -Wl,--no-undefined -Wl,-z,now -static-libstdc++ -static-libgcc -Wl,--gc-sections \
    "${wraps[@]}" -Wl,--push-state,--no-as-needed,-l:libdl.so.2,-l:libpthread.so.0,--pop-state \
    -ldl >>"$WORK/build-interposer.log" 2>&1 || return 1
  $CXX -o "$LEDGER_TOOL" "$obj/testing_mgpu_ledger.cc.o" "${tool_objs[@]}" -lpthread \
    >>"$WORK/build-interposer.log" 2>&1
}

find_probe_headers() {  # prints the -I flags that provide fmt, spdlog and nlohmann, or fails
  local deps="${CARVE_GPU_DEPS:-$ROOT/.gpu-deps}" flags=()
  for header in fmt/format.h spdlog/spdlog.h nlohmann/json.hpp; do
    if [[ -f "/usr/include/$header" || -f "/usr/local/include/$header" ]]; then continue; fi
    if [[ -f "$deps/include/$header" ]]; then flags=("-I$deps/include"); continue; fi
    echo "missing $header (install it, or carry what tests/gpu/pack-deps.sh packs)" >&2
    return 1
  done
  echo "${flags[@]}"
}

build_probe() {
  local inc
  inc="$(find_probe_headers 2>"$WORK/build-probe.log")" || return 1
  local srcs=("$ROOT"/src/agent/mig/{nvml_probe_main,discovery,catalog_check,probe_report}.cc
    "$ROOT"/src/agent/nvml/{lib_nvml,nvml_error}.cc
    "$ROOT"/src/catalog/{catalog,lookup,driver_version}.cc "$ROOT"/src/catalog/data/*.cc)
  for f in "$ROOT"/src/common/*.cc; do
    [[ "$f" == *_test.cc || "$f" == */base64.cc ]] || srcs+=("$f")
  done
  # shellcheck disable=SC2086
  compile_all "$WORK/obj-probe" -std=c++20 -O2 -DFMT_HEADER_ONLY -DSPDLOG_HEADER_ONLY \
    -DSPDLOG_FMT_EXTERNAL "-I$ROOT/src" $inc -- "${srcs[@]}" >>"$WORK/build-probe.log" 2>&1 ||
    return 1
  $CXX -o "$WORK/carve-nvml-probe" "$WORK"/obj-probe/*.o -ldl -lpthread \
    >>"$WORK/build-probe.log" 2>&1 && PROBE="$WORK/carve-nvml-probe"
}

build_workload() {
  local arch=()
  "$NVCC" --list-gpu-arch 2>/dev/null | grep -q . && arch=(-arch=native)
  "$NVCC" -O2 -std=c++17 "${arch[@]}" -o "$WORKLOAD" "$ROOT"/tests/gpu/device_check_*.cu \
    -lcuda -ldl >"$WORK/build-workload.log" 2>&1 ||
    "$NVCC" -O2 -std=c++17 -o "$WORKLOAD" "$ROOT"/tests/gpu/device_check_*.cu -lcuda -ldl \
      >>"$WORK/build-workload.log" 2>&1
}

# Builds only what some part will use: the library for the GPU parts, the probe where there is an
# NVML library to probe.
nvml_loadable() {
  python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$NVML_LIBRARY" >/dev/null 2>&1
}
echo "== building in $WORK"
LIB_OK=0
if [[ $GPU_PRESENT -eq 0 && $BUILD_ONLY -eq 0 ]]; then
  record build-interposer SKIPPED "$NO_GPU_REASON: nothing to run libcarve-mgpu.so on"
elif ! have "${CXX##* }"; then
  record build-interposer SKIPPED "no C++ compiler ($CXX)"
elif build_interposer; then
  LIB_OK=1
  record build-interposer PASS "$(du -h "$LIB" | cut -f1) libcarve-mgpu.so, mgpu_ledger"
else
  record build-interposer FAIL "$(tail -3 "$WORK/build-interposer.log" | tr '\n' ' ')"
fi
if [[ $LIB_OK -eq 1 ]]; then
  # shellcheck disable=SC2155
  if floor="$(bash "$ROOT/src/interposer/floor/check_symbol_floor.sh" "$LIB" 2.28 2>&1)"; then
    record library-floor PASS "$(grep -o 'highest GLIBC_ version: [0-9.]*' <<<"$floor"); no libstdc++ needed"
  else
    record library-floor FAIL "$(grep FAIL <<<"$floor" | head -2 | tr '\n' ' ')"
  fi
else
  record library-floor SKIPPED "the library was not built (see build-interposer)"
fi
if [[ $BUILD_ONLY -eq 1 ]]; then
  record build-probe SKIPPED "--build-only"
elif [[ -n "$PROBE" ]]; then
  record build-probe PASS "given: $PROBE"
elif ! nvml_loadable; then
  record build-probe SKIPPED "no NVML library ($NVML_LIBRARY) to probe"
elif ! have "${CXX##* }"; then
  record build-probe SKIPPED "no C++ compiler ($CXX)"
elif build_probe; then
  record build-probe PASS "carve-nvml-probe"
else
  record build-probe SKIPPED "$(tail -2 "$WORK/build-probe.log" | tr '\n' ' ')"
fi
WORKLOAD_OK=0
if [[ $BUILD_ONLY -eq 1 ]]; then
  record build-workload SKIPPED "--build-only"
elif [[ $GPU_PRESENT -eq 0 ]]; then
  record build-workload SKIPPED "$NO_GPU_REASON"
elif [[ ! -x "$NVCC" ]] && ! have "$NVCC"; then
  record build-workload SKIPPED "no nvcc"
elif build_workload; then
  WORKLOAD_OK=1
  record build-workload PASS "device_check built with $("$NVCC" --version | grep -o 'release [0-9.]*')"
else
  record build-workload FAIL "$(tail -3 "$WORK/build-workload.log" | tr '\n' ' ')"
fi

# shellcheck source=device-check-parts.sh
source "$(dirname "${BASH_SOURCE[0]}")/device-check-parts.sh"
if [[ $BUILD_ONLY -eq 0 ]]; then
  run_nvml_parts
  run_gpu_parts
fi

# ---- one JSON and a human summary -----------------------------------------------------------
python3 "$ROOT/tests/gpu/device_check_report.py" --results "$RESULTS" --out "$OUT_DIR" \
  --started "$START" --driver "$DRIVER" --mig "$MIG_MODES" --probe-json "$WORK/probe.json"
