# shellcheck shell=bash
# The parts of tests/gpu/device-check.sh, sourced by it (it sets ROOT, WORK, PROBE, NVML_LIBRARY,
# LIB, LEDGER_TOOL, WORKLOAD, QUOTA, GPU_PRESENT, LIB_OK, WORKLOAD_OK and defines record).
# Every part records PASS, FAIL or SKIPPED with its figure or its reason; none changes a GPU
# setting.

REPORT_PY="$ROOT/tests/gpu/device_check_report.py"

# The NVML probe against the catalog, and the read-only queries the agent relies on.
run_nvml_parts() {
  echo "== NVML (read-only)"
  if [[ -z "$PROBE" ]]; then
    for part in nvml-probe catalog-match nvml-read-only; do
      record "$part" SKIPPED "no carve-nvml-probe (see build-probe)"
    done
    return
  fi
  timeout 120 "$PROBE" --library "$NVML_LIBRARY" >"$WORK/probe.json" 2>"$WORK/probe.log"
  local rc=$?
  [[ -s "$WORK/probe.log" ]] && sed 's/^/  probe: /' "$WORK/probe.log"
  # The verdicts come from the JSON; a probe that crashed or printed no JSON is a failure.
  python3 "$REPORT_PY" probe-parts "$WORK/probe.json" "$rc" >"$WORK/probe-parts.tsv"
  while IFS=$'\t' read -r part status detail; do
    record "$part" "$status" "$detail"
  done <"$WORK/probe-parts.tsv"
  python3 "$REPORT_PY" probe-differences "$WORK/probe.json" || true
}

ledger() {  # ledger NAME LIMIT_BYTES CORE_PERCENT: a fresh worker ledger; prints its path
  rm -f "$WORK/$1.ledger"
  "$LEDGER_TOOL" create "$WORK/$1.ledger" "$1" "$2" "$3" 100 && echo "$WORK/$1.ledger"
}
as_worker() {  # as_worker LEDGER CMD...: runs CMD under the interposer as that ledger's worker
  local l="$1"
  shift
  CARVE_MGPU_LEDGER="$l" LD_PRELOAD="$LIB" timeout 120 "$@"
}
field() {  # field KEY LINE: the value of KEY=... in a key=value line
  sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"
}

# run_check PART LEDGER MODE ARGS...: the workload's own verdict (0 pass, 77 skip, else fail).
run_check() {
  local part="$1" l="$2"
  shift 2
  local line rc
  line="$(as_worker "$l" "$WORKLOAD" "$@" 2>&1 | tail -1)"
  rc=${PIPESTATUS[0]}
  case "$rc" in
    0) record "$part" PASS "$line" ;;
    77) record "$part" SKIPPED "${line#reason=}" ;;
    *) record "$part" FAIL "exit $rc: $line" ;;
  esac
}

within() {  # within VALUE TARGET TOLERANCE: |VALUE - TARGET| <= TOLERANCE
  python3 -c "import sys; v,t,d=map(float,sys.argv[1:]); sys.exit(0 if abs(v-t)<=d else 1)" "$@"
}

compute_parts() {
  local unlimited alone k0 k30 ratio
  unlimited="$(timeout 60 "$WORKLOAD" run 1 2>&1 | tail -1)"
  k0="$(field kernels_per_s "$unlimited")"
  if [[ -z "$k0" ]]; then
    record compute-alone FAIL "the unlimited run printed no rate: $unlimited"
    record compute-contended SKIPPED "no unlimited rate to compare with"
    return
  fi
  alone="$(as_worker "$(ledger alone30 $((8 << 30)) 30)" "$WORKLOAD" run 1 2>&1 | tail -1)"
  k30="$(field kernels_per_s "$alone")"
  ratio="$(python3 -c "print(f'{float(\"${k30:-0}\")/float(\"$k0\"):.3f}')")"
  if within "$ratio" 0.30 0.05; then
    record compute-alone PASS "30% worker ran $ratio of unlimited ($k30 vs $k0 kernels/s, 1 s)"
  else
    record compute-alone FAIL "30% worker ran $ratio of unlimited ($k30 vs $k0 kernels/s, 1 s)"
  fi
  local a b r30 r60
  as_worker "$(ledger pair30 $((8 << 30)) 30)" "$WORKLOAD" run 1 >"$WORK/pair30.out" 2>&1 &
  a=$!
  as_worker "$(ledger pair60 $((8 << 30)) 60)" "$WORKLOAD" run 1 >"$WORK/pair60.out" 2>&1 &
  b=$!
  wait "$a" "$b"
  r30="$(python3 -c "print(f'{float(\"$(field kernels_per_s "$(tail -1 "$WORK/pair30.out")")\" or 0)/float(\"$k0\"):.3f}')")"
  r60="$(python3 -c "print(f'{float(\"$(field kernels_per_s "$(tail -1 "$WORK/pair60.out")")\" or 0)/float(\"$k0\"):.3f}')")"
  if within "$r30" 0.30 0.05 && within "$r60" 0.60 0.05; then
    record compute-contended PASS "side by side for 1 s: 30% worker $r30, 60% worker $r60 of unlimited"
  else
    record compute-contended FAIL "side by side for 1 s: 30% worker $r30, 60% worker $r60 of unlimited"
  fi
}

latency_part() {
  local q l d_med=() d_p99=() q_med=() q_p99=() l_med=() l_p99=() line
  q="$(ledger lat100 $((4 << 30)) 100)"
  l="$(ledger lat99 $((4 << 30)) 99)"
  for _ in 1 2 3; do  # alternated, so that drift hits all three alike
    line="$(timeout 60 "$WORKLOAD" latency 100000 | tail -1)"
    d_med+=("$(field median_ns "$line")"); d_p99+=("$(field p99_ns "$line")")
    line="$(as_worker "$q" "$WORKLOAD" latency 100000 | tail -1)"
    q_med+=("$(field median_ns "$line")"); q_p99+=("$(field p99_ns "$line")")
    line="$(as_worker "$l" "$WORKLOAD" latency 100000 | tail -1)"
    l_med+=("$(field median_ns "$line")"); l_p99+=("$(field p99_ns "$line")")
  done
  local verdict
  verdict="$(python3 - "${d_med[*]}" "${d_p99[*]}" "${q_med[*]}" "${q_p99[*]}" "${l_med[*]}" \
    "${l_p99[*]}" <<'PY'
import statistics, sys
d, dp, q, qp, l, lp = ([float(x) for x in a.split()] for a in sys.argv[1:])
m = statistics.median
added = (m(q) - m(d), m(qp) - m(dp), m(l) - m(d), m(lp) - m(dp))
ok = added[0] <= 100 and added[1] <= 1000 and added[2] <= 1000
print(("PASS" if ok else "FAIL") + "\t" +
      f"direct median {m(d):.0f} ns p99 {m(dp):.0f}; quota only +{added[0]:.0f} / +{added[1]:.0f}; "
      f"limiter (99%) +{added[2]:.0f} / +{added[3]:.0f} ns added median / p99 "
      "(goal: quota only <= 100 / 1000, limiter <= 1000 median; 3 alternated rounds of 100k)")
PY
)"
  record launch-latency "${verdict%%$'\t'*}" "${verdict#*$'\t'}"
}

GPU_PARTS=(quota-cudaMalloc quota-async-cudaFree quota-vmm-retain quota-host-vmm quota-graph-node
  meminfo-virtualized compute-alone compute-contended capture-elsewhere procaddress-identity
  launch-latency)

run_gpu_parts() {
  echo "== under libcarve-mgpu.so on the GPU"
  local why=""
  [[ $GPU_PRESENT -eq 1 ]] || why="$NO_GPU_REASON"
  [[ -z "$why" && $LIB_OK -eq 0 ]] && why="libcarve-mgpu.so was not built (see build-interposer)"
  [[ -z "$why" && $WORKLOAD_OK -eq 0 ]] && why="the CUDA workload was not built (see build-workload)"
  if [[ -n "$why" ]]; then
    for part in "${GPU_PARTS[@]}"; do record "$part" SKIPPED "$why"; done
    return
  fi
  run_check quota-cudaMalloc "$(ledger malloc "$QUOTA" 100)" quota-malloc
  run_check quota-async-cudaFree "$(ledger async "$QUOTA" 100)" quota-async-free
  run_check quota-vmm-retain "$(ledger vmm "$QUOTA" 100)" quota-vmm
  run_check quota-host-vmm "$(ledger host "$QUOTA" 100)" quota-host
  run_check quota-graph-node "$(ledger graph "$QUOTA" 100)" quota-graph
  run_check meminfo-virtualized "$(ledger info "$QUOTA" 100)" meminfo "$QUOTA"
  compute_parts
  run_check capture-elsewhere "$(ledger capture $((8 << 30)) 30)" capture-elsewhere 1
  run_check procaddress-identity "$(ledger identity "$QUOTA" 100)" identity
  latency_part
}
