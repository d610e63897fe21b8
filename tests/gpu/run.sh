#!/usr/bin/env bash
# Read-only NVML check for a real GPU host: builds carve-nvml-probe, then reads NVML discovery,
# the MIG profile table and the possible placements of every GPU, compares them with carve's
# catalog and prints the result. It NEVER changes the MIG mode and NEVER creates or destroys
# instances: the probe goes through ReadOnlyNvml, and the only nvidia-smi calls are listings.
#
#   tests/gpu/run.sh [--build-dir DIR] [--out FILE] [--strict]
#     --build-dir  where to configure/build (default: build-gpu at the repo root)
#     --out        where to keep the probe's JSON (default: <build-dir>/gpu-probe.json)
#     --strict     exit 4 when live placements differ from the catalog, 5 when nothing could
#                  be compared (MIG off without root, a GPU without MIG)
#     --library    NVML library to load (default libnvidia-ml.so.1); e.g. the fake one
#                  (<build>/fake-nvml/libnvidia-ml.so.1 + CARVE_FAKE_NVML_CONFIG) to try the script
# The probe writes its JSON to stdout and its log lines to stderr (shown here, never mixed into
# the JSON). An NVML that is there but lacks entry points carve needs is a failure, not a skip.
# Exit: 0 done (or skipped: no NVML/GPU on this host), 1 build or NVML failure, 4/5 see --strict.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$ROOT/build-gpu"
OUT=""
STRICT=0
LIBRARY=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --strict) STRICT=1; shift ;;
    --library) LIBRARY=(--library "$2"); shift 2 ;;
    *) echo "usage: $0 [--build-dir DIR] [--out FILE] [--strict] [--library PATH]" >&2; exit 2 ;;
  esac
done
OUT="${OUT:-$BUILD/gpu-probe.json}"

echo "== carve GPU check (read-only) on $(hostname), $(date -u +%FT%TZ)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L || true
  nvidia-smi --query-gpu=index,name,pci.device_id,driver_version,mig.mode.current,mig.mode.pending \
    --format=csv || true
  # Listings only (no -cgi/-dgi/-mig): the profile table and placements as nvidia-smi sees them.
  nvidia-smi mig -lgip || true
  nvidia-smi mig -lgipp || true
else
  echo "nvidia-smi: not installed"
fi

echo "== building carve-nvml-probe in $BUILD"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD" --target carve-nvml-probe

echo "== probing NVML"
mkdir -p "$(dirname "$OUT")"
set +e
"$BUILD/carve-nvml-probe" "${LIBRARY[@]}" >"$OUT"
rc=$?
set -e
if [[ $rc -eq 3 ]]; then
  echo "SKIPPED: no usable NVML/GPU on this host: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["reason"])' "$OUT")"
  exit 0
fi
if [[ $rc -ne 0 ]]; then
  echo "FAILED: carve-nvml-probe exited $rc" >&2
  cat "$OUT" >&2
  exit 1
fi

python3 - "$OUT" "$STRICT" <<'PY'
import json, sys
path, strict = sys.argv[1], sys.argv[2] == "1"
try:
    with open(path) as f:
        report = json.load(f)
except (OSError, ValueError) as e:
    print(f"FAILED: the probe's output is not one JSON document ({e}); it was:")
    print(open(path, errors="replace").read()[:4000])
    sys.exit(1)
gpus = report.get("gpus", [])
summary = report.get("summary", {})
print(f"driver {report.get('driver_version')}, {len(gpus)} GPU(s)")
for g in gpus:
    print(f"GPU {g.get('index')}: {g.get('name')} pci {g.get('pci_device_id')} uuid {g.get('uuid')}")
    print(f"  catalog model: {g.get('catalog_model')}; MIG capable {g.get('mig_capable')}, "
          f"current {g.get('mig_current')}, pending {g.get('mig_pending')}")
    if "error" in g:
        print(f"  ERROR: {g['error']}")
    if "profiles_unread" in g:
        print(f"  profiles not compared: {g['profiles_unread']}")
    for p in g.get("profiles", []):
        starts = ",".join(str(x["start"]) for x in p.get("placements", []))
        sizes = sorted({x["size"] for x in p.get("placements", [])})
        name = p.get("name", "(table not served; read by catalog id)")
        extra = ""
        if p.get("source") == "profile-table":
            extra = (f" slices {p.get('slices')} max {p.get('instances')} SMs {p.get('sms')}"
                     f" mem {p.get('memory_mib')} MiB")
        print(f"  profile id {p.get('id'):>2} {name}: {{{starts}}}:{'/'.join(map(str, sizes))}{extra}")
for calls in report.get("read_only_calls", []):
    answers = []
    for key in ("gpu_instances", "mig_devices", "compute_processes"):
        v = calls.get(key)
        answers.append(f"{key} {len(v)}" if isinstance(v, list) else f"{key} error: {v.get('error')}")
    u = calls.get("utilization", {})
    answers.append(f"utilization {u.get('gpu_percent')}%" if "gpu_percent" in u
                   else f"utilization error: {u.get('error')}")
    print(f"GPU {calls.get('gpu')} read-only calls: " + "; ".join(answers))
diffs = report.get("differences", [])
compared = summary.get("profiles_compared", 0)
code = 0
if diffs:
    print(f"RESULT: {len(diffs)} difference(s) from the catalog (live data wins):")
    for d in diffs:
        print(f"  [{d.get('kind')}] GPU {d.get('gpu')} {d.get('profile')}: "
              f"catalog {d.get('catalog')} / live {d.get('live')}")
        print(f"      {d.get('message')}")
    if strict and summary.get("placement_differences", 0) > 0:
        code = 4
elif compared == 0:
    print("RESULT: NOTHING COMPARED: no GPU's profiles or placements could be read, so "
          "no match can be claimed")
    code = 5 if strict else 0
else:
    print(f"RESULT: {compared} live profile(s) match the catalog")
print(f"(full JSON: {path})")
sys.exit(code)
PY
