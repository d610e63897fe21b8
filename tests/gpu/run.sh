#!/usr/bin/env bash
# Read-only NVML check for a real GPU host: builds carve-nvml-probe, then reads NVML discovery,
# the MIG profile table and the possible placements of every GPU, compares them with carve's
# catalog and prints the result. It NEVER changes the MIG mode and NEVER creates or destroys
# instances: the probe goes through ReadOnlyNvml, and the only nvidia-smi calls are listings.
#
#   tests/gpu/run.sh [--build-dir DIR] [--out FILE] [--strict]
#     --build-dir  where to configure/build (default: build-gpu at the repo root)
#     --out        where to keep the probe's JSON (default: <build-dir>/gpu-probe.json)
#     --strict     exit 4 when live placements differ from the catalog
#     --library    NVML library to load (default libnvidia-ml.so.1); e.g. the fake one
#                  (<build>/fake-nvml/libnvidia-ml.so.1 + CARVE_FAKE_NVML_CONFIG) to try the script
# Exit: 0 done (or skipped: no NVML/GPU on this host), 1 build or NVML failure, 4 see --strict.
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
report = json.load(open(sys.argv[1]))
strict = sys.argv[2] == "1"
print(f"driver {report['driver_version']}, {report['summary']['gpus']} GPU(s)")
for g in report["gpus"]:
    print(f"GPU {g['index']}: {g['name']} pci {g['pci_device_id']} uuid {g['uuid']}")
    print(f"  catalog model: {g['catalog_model']}; MIG capable {g['mig_capable']}, "
          f"current {g['mig_current']}, pending {g['mig_pending']}")
    if "error" in g:
        print(f"  ERROR: {g['error']}")
    for p in g["profiles"]:
        starts = ",".join(str(x["start"]) for x in p["placements"])
        sizes = sorted({x["size"] for x in p["placements"]})
        name = p.get("name", "(table not served; read by catalog id)")
        extra = ""
        if p["source"] == "profile-table":
            extra = (f" slices {p['slices']} max {p['instances']} SMs {p['sms']}"
                     f" mem {p['memory_mib']} MiB")
        print(f"  profile id {p['id']:>2} {name}: {{{starts}}}:{'/'.join(map(str, sizes))}{extra}")
diffs = report["differences"]
if not diffs:
    print("RESULT: live profiles and placements match the catalog")
else:
    print(f"RESULT: {len(diffs)} difference(s) from the catalog (live data wins):")
    for d in diffs:
        print(f"  [{d['kind']}] GPU {d['gpu']} {d['profile']}: catalog {d['catalog']} / live {d['live']}")
        print(f"      {d['message']}")
print(f"(full JSON: {sys.argv[1]})")
if strict and report["summary"]["placement_differences"] > 0:
    sys.exit(4)
PY
