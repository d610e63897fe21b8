#!/usr/bin/env bash
# The seed's RayJob against real Ray, for a node that has Ray installed (`pip install "ray[default]"`):
# a `carve server` with no embedded fleet, one `carve agent` on this machine (NVML when it sees a
# GPU, else simulated GPUs), an mGPU queue on it, and a RayJob whose 2 workers get the seed's
# serverless.ray.worker.mgpu.core=30 and memory=4096. The driver checks ray.cluster_resources()
# and that every worker node offers exactly one GPU; on a GPU host it also runs a task on each
# worker that reads the memory CUDA lets it use (cuMemGetInfo through the interposer), which must
# be at most the 4096 MiB quota.
#
#   tests/ray/real-ray.sh [--build-dir DIR]
# Exit: 0 passed or skipped (no `ray` on PATH), 1 failed, 2 usage.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$ROOT/build"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    *) echo "usage: $0 [--build-dir DIR]" >&2; exit 2 ;;
  esac
done
if ! command -v ray >/dev/null 2>&1; then
  echo "SKIPPED: ray is not installed on this machine (pip install \"ray[default]\")"
  exit 0
fi
echo "== $(ray --version) on $(hostname), $(date -u +%FT%TZ)"
cmake --build "$BUILD" --target carve carve-mgpu >/dev/null
CARVE="$BUILD/carve"
LIB="$(find "$BUILD" -name libcarve-mgpu.so -print -quit)"

WORK="$(mktemp -d)"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
URL="http://127.0.0.1:$PORT"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ray stop --force >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

printf 'fleet:\n  nodes: []\n' > "$WORK/carve.yaml"
"$CARVE" server --listen "127.0.0.1:$PORT" --data-dir "$WORK/server" --config "$WORK/carve.yaml" \
  --log-level warn > "$WORK/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -f "$WORK/server/credentials" ]] && break; sleep 0.1; done
TOKEN=
for _ in $(seq 100); do  # until the server listens
  TOKEN=$(AWS_REGION=us-east-1 "$CARVE" node token create --endpoint-url "$URL" --credentials \
          "$WORK/server/credentials" 2>/dev/null) && break
  sleep 0.1
done
AGENT=(--server "$URL" --join-token "$TOKEN" --node-id ray-node
       --data-dir "$WORK/agent" --interposer "$LIB" --log-level warn)
GPU=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then GPU=1; fi
if [[ $GPU -eq 0 ]]; then AGENT+=(--driver sim --instance-type ml.g5.48xlarge); fi
"$CARVE" agent "${AGENT[@]}" > "$WORK/agent.log" 2>&1 &
pids+=($!)
export CARVE_ENDPOINT_URL="$URL" AWS_SHARED_CREDENTIALS_FILE="$WORK/server/credentials"
for _ in $(seq 300); do
  "$CARVE" queue create rq --mgpu --node ray-node >/dev/null 2>&1 && break
  sleep 0.2
done
"$CARVE" queue describe rq

cat > "$WORK/driver.py" <<PY
import ctypes, json, sys, time
import ray
ray.init()
deadline = time.time() + 120
while len([n for n in ray.nodes() if n["Alive"]]) < 3 and time.time() < deadline:
    time.sleep(1)
print("cluster_resources:", json.dumps(ray.cluster_resources()))
workers = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("GPU", 0) > 0]
print("worker GPUs:", [n["Resources"].get("GPU") for n in workers])
ok = len(workers) == 2 and all(n["Resources"]["GPU"] == 1 for n in workers)
if $GPU:
    @ray.remote(num_gpus=1)
    def allowed_mib():
        cuda = ctypes.CDLL("libcuda.so.1")
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
        assert cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev) == 0
        assert cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)) == 0
        return total.value // (1 << 20)
    seen = ray.get([allowed_mib.remote() for _ in workers])
    print("memory each worker may use (MiB):", seen)
    ok = ok and all(m <= 4096 for m in seen)
sys.exit(0 if ok else 3)
PY
JOB=$("$CARVE" --json job submit -q rq --type RayJob --workers 2 --entrypoint "python3 $WORK/driver.py" \
  --parameters 'serverless.ray.worker.mgpu.core=30; serverless.ray.worker.mgpu.memory=4096;' \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "== submitted $JOB"
state=""
for _ in $(seq 900); do
  state=$("$CARVE" --json job describe -q rq "$JOB" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  [[ "$state" == Succeeded || "$state" == Failed ]] && break
  sleep 0.2
done
"$CARVE" job describe -q rq "$JOB"
"$CARVE" job logs -q rq "$JOB" || true
if [[ "$state" != Succeeded ]]; then
  echo "FAILED: $JOB is $state"
  exit 1
fi
echo "PASSED: real Ray saw one GPU per worker$([[ $GPU -eq 1 ]] && echo ' and the 4096 MiB quota')"
