#!/usr/bin/env bash
# The mGPU part of `make demo`, against a running `carve server` (CARVE_ENDPOINT_URL and
# AWS_SHARED_CREDENTIALS_FILE set by the caller): an mGPU queue on the simulated 8-GPU
# ml.g5.48xlarge node, the seed's CustomJob of 20 tasks at core=30 memory=1000 placed three to a
# card, a job with emr.serverless.mgpu.core=150 rejected with its reason, and the queue's GPU
# usage. Cleans up after itself (cancels the job, deletes the queue), whatever happens.
#   usage: scripts/demo-mgpu.sh [BUILD_DIR]        (or CARVE_BIN=path/to/carve)
set -euo pipefail
build=${1:-build}
carve=${CARVE_BIN:-$build/carve}
: "${CARVE_ENDPOINT_URL:?set CARVE_ENDPOINT_URL to the carve server, e.g. http://127.0.0.1:8080}"
: "${AWS_SHARED_CREDENTIALS_FILE:?set AWS_SHARED_CREDENTIALS_FILE to the credentials file the server wrote}"
queue=demo-mgpu
job=""
run() {
  echo
  echo "\$ carve $*"
  "$carve" "$@" || echo "(exit $?)"
}
cleanup() {
  if [[ -n "$job" ]]; then "$carve" job cancel -q "$queue" "$job" >/dev/null 2>&1 || true; fi
  for _ in $(seq 1 100); do
    "$carve" queue delete "$queue" >/dev/null 2>&1 && break
    "$carve" queue describe "$queue" >/dev/null 2>&1 || break
    sleep 0.1
  done
}
trap cleanup EXIT

echo
echo "== mGPU queues: the seed's EMR Serverless scenario =="
run queue create "$queue" --mgpu --instance-type ml.g5.48xlarge --count 1 --strategy BINPACK
seed='-- the seed'"'"'s CustomJob parameters
emr.serverless.mgpu.core=30;
emr.serverless.mgpu.memory=1000;
serverless.custom.job.task.gpus=1;'
echo
echo "\$ carve job submit -q $queue --name seed-20 --command 'sleep 120' --tasks 20 --parameters '<seed text>'"
job=$("$carve" job submit -q "$queue" --name seed-20 --command 'sleep 120' --tasks 20 \
        --parameters "$seed" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "submitted $job"
# Poll (with a deadline) until every task is placed and running.
for _ in $(seq 1 600); do
  state=$("$carve" job describe -q "$queue" "$job" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
print("ready" if all(t["state"] == "Running" for t in j["tasks"]) else j["state"])')
  [[ "$state" == ready ]] && break
  sleep 0.1
done
run job describe -q "$queue" "$job"
echo
echo "Tasks per card (BINPACK, core 30% each: three to a card):"
"$carve" job describe -q "$queue" "$job" --json | python3 -c '
import json, sys
cards = {}
for t in json.load(sys.stdin)["tasks"]:
    cards.setdefault(t["gpus"][0], []).append(t["index"])
for gpu in sorted(cards):
    print(f"  gpu {gpu}: tasks {cards[gpu]}  core {30 * len(cards[gpu])}%")'

echo
echo "The seed's troubleshooting case: core=150 is not a multiple of 100."
run job submit -q "$queue" --name too-big --command 'true' \
    --parameters 'emr.serverless.mgpu.core=150;'
run job list -q "$queue"
run queue gpu "$queue"
