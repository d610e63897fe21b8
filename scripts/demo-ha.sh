#!/usr/bin/env bash
# `make demo-ha`: the control plane on etcd (docs/ha.md), on loopback.
#   1. three etcd members (scripts/etcd-cluster.sh) and two `carve server --store etcd://...`
#      replicas: one leads, the other waits as a standby;
#   2. one `carve agent` with a simulated ml.p4d.24xlarge that knows both replicas;
#   3. the seed's scenario with the aws CLI: model, the p4d layout, endpoint, three inference
#      components (one per partition type), InvokeEndpoint;
#   4. kill -9 of the leader in the middle of it: the standby leads, the agent moves over, the
#      copies keep running, the endpoint answers, and the rest of the scenario goes on.
# Everything is stopped on exit, whatever happens.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
carve=$(cd "$build" && pwd)/carve
work=$(mktemp -d /tmp/carve-demo-ha.XXXXXX)
if [[ -z "${CARVE_ETCD:-}" ]]; then
  # Run again inside three fresh etcd members; they stop when this script ends.
  trap 'rm -rf "$work"' EXIT
  "$root/scripts/etcd-cluster.sh" "$work/etcd" 3 -- "$0" "$build"
  exit $?
fi

pids=()
# The copies the agent runs, from its pid files (an agent that stops leaves them running, for the
# next agent to adopt).
copies() {
  find "$work/agent" -name pid -exec python3 -c '
import json, sys
print(" ".join(str(json.load(open(f))["pid"]) for f in sys.argv[1:]))' {} + 2>/dev/null | tr " " "\n" | sort -n | tr "\n" " "
}
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for p in $(copies); do kill -KILL -- "-$p" "$p" 2>/dev/null || true; done
  # A sandboxed copy runs in a session of its own under bwrap (docs/security.md, "Sandbox"), so
  # its pid file's group does not reach it: every process that names this demo's directory goes.
  for d in /proc/[0-9]*; do
    if grep -qaF "$work" "$d/cmdline" "$d/environ" 2>/dev/null; then
      kill -KILL "${d#/proc/}" 2>/dev/null || true
    fi
  done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
await_listening() {  # log pid
  for _ in $(seq 1 300); do
    grep -q "listening on" "$1" && return 0
    kill -0 "$2" 2>/dev/null || { cat "$1"; return 1; }
    sleep 0.1
  done
  return 1
}

echo "== etcd: $CARVE_ETCD =="
port_a=$(free_port) port_b=$(free_port)
a="http://127.0.0.1:$port_a" b="http://127.0.0.1:$port_b"
mkdir -p "$work/a" "$work/b"
printf 'fleet:\n  nodes:\n    - instance_type: ml.p4d.24xlarge\n      count: 1\nruntimes:\n  default_runtime: carve/testmodel\n' >"$work/fleet.yaml"
replica() {  # name port
  "$carve" server --listen "127.0.0.1:$2" --data-dir "$work/$1" --store "$CARVE_ETCD/carve-demo" \
    --no-local-agent --config "$work/fleet.yaml" --leader-ttl-s 2 --log-level info \
    >"$work/$1.log" 2>&1 &
  pids+=($!)
}
replica a "$port_a"
pid_a=${pids[-1]}
await_listening "$work/a.log" "$pid_a"
echo "replica a ($a) leads"
cp -p "$work/a/credentials" "$work/b/credentials"  # One key for the whole control plane.
replica b "$port_b"
pid_b=${pids[-1]}
export AWS_SHARED_CREDENTIALS_FILE="$work/a/credentials" AWS_DATA_PATH="$root/contrib/aws"
export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null
# The agent joins with an operator's bootstrap token and keeps its own node credential.
token=$("$carve" node token create --endpoint-url "$a" --ttl 10m --description "demo-ha agent")
"$carve" agent --server "$a,$b" --join-token "$token" --driver sim \
  --instance-type ml.p4d.24xlarge --node-id p4d-0 --data-dir "$work/agent" \
  >"$work/agent.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  grep -q "registered\|Ready" "$work/a.log" && break
  sleep 0.1
done
echo
echo "\$ carve cluster status --endpoint-url $a"
"$carve" cluster status --endpoint-url "$a" --credentials "$work/a/credentials"

url=$a
sm() {
  echo "\$ aws sagemaker $1 ... --endpoint-url $url" >&2
  aws sagemaker "$@" --endpoint-url "$url" --output json
}
invoke() {
  echo "\$ aws sagemaker-runtime invoke-endpoint --inference-component-name $1 --endpoint-url $url"
  aws sagemaker-runtime invoke-endpoint --endpoint-url "$url" \
    --endpoint-name multi-model-partitioned --inference-component-name "$1" \
    --content-type application/json --body '{"inputs": "one GPU, many models"}' \
    "$work/out.json" --output json --query ContentType
  echo "response body: $(cat "$work/out.json")"
}
wait_component() {
  for _ in $(seq 1 300); do
    s=$(aws sagemaker describe-inference-component --inference-component-name "$1" \
      --endpoint-url "$url" --query InferenceComponentStatus --output text 2>/dev/null || true)
    [[ "$s" == InService ]] && return 0
    sleep 0.2
  done
  echo "component $1 did not reach InService" >&2
  return 1
}

echo
echo "== the seed scenario, on replica a =="
sm create-model --model-name summarizer-model --primary-container Image=example.com/llm:1
sm create-endpoint-config --endpoint-config-name multi-model-partitioned --production-variants '[{
    "VariantName": "AllTraffic", "InstanceType": "ml.p4d.24xlarge", "InitialInstanceCount": 1,
    "AcceleratorPartitionLayouts": [
      {"AcceleratorPartitionTypes": ["mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"]}]}]'
sm create-endpoint --endpoint-name multi-model-partitioned \
  --endpoint-config-name multi-model-partitioned
for _ in $(seq 1 150); do
  status=$(aws sagemaker describe-endpoint --endpoint-name multi-model-partitioned \
    --endpoint-url "$url" --query EndpointStatus --output text)
  [[ "$status" == InService || "$status" == Failed ]] && break
  sleep 0.2
done
echo "endpoint: $status"
for pair in summarizer:mig-4g.20gb classifier:mig-2g.10gb; do
  sm create-inference-component --inference-component-name "${pair%%:*}" \
    --endpoint-name multi-model-partitioned --variant-name AllTraffic \
    --specification "ModelName=summarizer-model,ComputeResourceRequirements={AcceleratorPartitionType=${pair#*:},NumberOfAcceleratorDevicesRequired=1,NumberOfCpuCoresRequired=1,MinMemoryRequiredInMb=2048}" \
    --runtime-config CopyCount=1 >/dev/null
  wait_component "${pair%%:*}"
done
invoke summarizer
copies_before=$(copies)

echo
echo "== kill -9 of the leader (replica a, pid $pid_a) =="
start=$(date +%s.%N)
kill -9 "$pid_a"
url=$b
await_listening "$work/b.log" "$pid_b"
echo "replica b ($b) leads after $(python3 -c "print(f'{$(date +%s.%N) - $start:.2f}')") s"
echo
echo "\$ carve cluster status --endpoint-url $b"
"$carve" cluster status --endpoint-url "$b" --credentials "$work/a/credentials" || true
echo
echo "== the scenario goes on, on replica b =="
sm describe-endpoint --endpoint-name multi-model-partitioned \
  --query '{Status: EndpointStatus, Config: EndpointConfigName}'
wait_component summarizer
invoke summarizer
sm create-inference-component --inference-component-name guardrail \
  --endpoint-name multi-model-partitioned --variant-name AllTraffic \
  --specification "ModelName=summarizer-model,ComputeResourceRequirements={AcceleratorPartitionType=mig-1g.5gb,NumberOfAcceleratorDevicesRequired=1,NumberOfCpuCoresRequired=1,MinMemoryRequiredInMb=2048}" \
  --runtime-config CopyCount=1 >/dev/null
wait_component guardrail
invoke guardrail
copies_after=$(copies)
echo
echo "copy processes before the kill: $copies_before"
echo "copy processes now:             $copies_after(summarizer's and classifier's kept running)"
aws sagemaker list-inference-components --endpoint-url "$url" --output text \
  --query 'InferenceComponents[].[InferenceComponentName,InferenceComponentStatus]'
echo "carve demo-ha: done"
