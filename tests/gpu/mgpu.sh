#!/usr/bin/env bash
# mGPU enforcement on a real GPU (H200 or any sm_90 card). Not run in CI: it needs a GPU.
# Builds tests/gpu/mgpu_workload.cu with nvcc and, under libcarve-mgpu.so:
#   1. the memory quota, with cudaMalloc and with the VMM path (cuMemCreate);
#   2. a real cuMemGetInfo, with and without the interposer;
#   3. two workers at 30% and 70% of the card, side by side for 10 s, with and without CUDA
#      graphs, plus the 30% worker alone: completed kernels per second of each;
#   4. the added host-side launch latency (median, p99), quota-only and with the limiter.
# Changes no GPU setting (no persistence mode, clocks, MIG or MPS). Takes about two minutes.
# Usage: tests/gpu/mgpu.sh [BUILD_DIR]   (BUILD_DIR defaults to build; it must contain the
#        carve-mgpu and mgpu_ledger targets: cmake --build BUILD --target carve-mgpu mgpu_ledger)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
LIB="$BUILD/src/interposer/libcarve-mgpu.so"
LEDGER_TOOL="$BUILD/src/interposer/mgpu_ledger"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
WORK="$(mktemp -d /tmp/carve-mgpu-gpu-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU visible"; exit 0
fi
for f in "$LIB" "$LEDGER_TOOL"; do
  [[ -e "$f" ]] || { echo "missing $f: build carve-mgpu and mgpu_ledger first" >&2; exit 1; }
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

echo "== build"
"$NVCC" -O2 -std=c++17 -arch=sm_90 -o "$WORK/mgpu_workload" "$ROOT/tests/gpu/mgpu_workload.cu" \
  -lcuda
W="$WORK/mgpu_workload"

ledger() {  # ledger NAME LIMIT_BYTES CORE_PERCENT -> path
  "$LEDGER_TOOL" create "$WORK/$1.ledger" "$1" "$2" "$3" 100
  echo "$WORK/$1.ledger"
}
as_worker() {  # as_worker LEDGER CMD...
  local l="$1"; shift
  CARVE_MGPU_LEDGER="$l" LD_PRELOAD="$LIB" "$@"
}
fail=0

echo "== 1. memory quota (1 GiB): cudaMalloc and cuMemCreate"
as_worker "$(ledger quota $((1 << 30)) 100)" "$W" quota $((1 << 30)) || fail=1

echo "== 2. cuMemGetInfo"
echo -n "direct:      "; "$W" meminfo
echo -n "interposed:  "; as_worker "$(ledger info $((4 << 30)) 100)" "$W" meminfo

run_pair() {  # run_pair MODE: 30% and 70% workers side by side for 10 s
  local a b
  a="$(ledger "w30-$1" $((8 << 30)) 30)"; b="$(ledger "w70-$1" $((8 << 30)) 70)"
  as_worker "$a" "$W" run 10 "$1" > "$WORK/w30-$1.out" &
  local p30=$!
  as_worker "$b" "$W" run 10 "$1" > "$WORK/w70-$1.out" &
  local p70=$!
  wait "$p30" "$p70"
  echo "30%: $(cat "$WORK/w30-$1.out")"
  echo "70%: $(cat "$WORK/w70-$1.out")"
  "$LEDGER_TOOL" show "$a" | sed 's/^/30% ledger: /'
  "$LEDGER_TOOL" show "$b" | sed 's/^/70% ledger: /'
}

echo "== 3. compute share: unlimited baseline (5 s), 30% alone (10 s), then 30% + 70% together"
echo "alone, unlimited: $("$W" run 5 kernel)"
echo "alone, 30%:       $(as_worker "$(ledger alone30 $((8 << 30)) 30)" "$W" run 10 kernel)"
echo "-- launches"; run_pair kernel
echo "-- CUDA graphs"; run_pair graph
echo "-- bandwidth kernel, unlimited: $("$W" run 3 bw)"

echo "== 4. added launch latency (200k empty-kernel launches each)"
echo "direct:              $("$W" latency 200000)"
echo "interposed, quota:   $(as_worker "$(ledger lat100 $((4 << 30)) 100)" "$W" latency 200000)"
echo "interposed, limiter: $(as_worker "$(ledger lat99 $((4 << 30)) 99)" "$W" latency 200000)"

if [[ $fail -ne 0 ]]; then echo "FAIL: the memory quota was not exact"; exit 1; fi
echo "done"
