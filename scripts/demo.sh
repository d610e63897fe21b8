#!/usr/bin/env bash
# `make demo`: a short scripted tour of carve on its embedded defaults.
#   1. (offline) catalog and layout engine;
#   2. the seed's SageMaker scenario against a real `carve server` with the embedded fleet
#      (2 x ml.p4d.24xlarge + 1 x ml.p5.48xlarge + 1 x ml.g5.48xlarge, simulated GPUs, run by the
#      server's local agent), driven by the stock aws CLI: model, endpoint config with the p4d
#      layout, endpoint, InService, three inference components (one per partition type), one
#      scaled past its partitions; the carve map; every copy as a real process bound to its MIG
#      partition; InvokeEndpoint routed by component;
#   3. an mGPU queue with a 20-task CustomJob at core=30/memory=1000 and a rejected core=150 job;
#   4. `carve bench` through the router against the same model on a p5 mig-3g.40gb and on a whole
#      A100, the comparison table and the plots (written under $CARVE_DEMO_OUT, default
#      <build>/demo). The server is stopped on exit, whatever happens.
set -euo pipefail
build=${1:-build}
carve="$build/carve"
root=$(cd "$(dirname "$0")/.." && pwd)
echo "carve demo: offline catalog and layout engine"
run() {
  echo
  echo "\$ carve $*"
  "$carve" "$@" || echo "(exit $?)"
}
run profiles --gpu a100-40gb
# The seed's layout, carved uniformly on an ml.p4d.24xlarge: 24 partitions, 8 of each.
run layout check --instance-type ml.p4d.24xlarge mig-4g.20gb mig-2g.10gb mig-1g.5gb
# Two halves fill an H100; a third profile is refused with provided-against-requested.
run layout check --gpu h100-80gb mig-3g.40gb mig-3g.40gb mig-1g.10gb
# The driver rule the real driver does not name.
run layout check --gpu a100-40gb 1g.10gb 3g.20gb --driver 470.199.02
# mGPU parameter text from the seed, then the seed's troubleshooting case.
printf 'emr.serverless.mgpu.core=30;\nemr.serverless.mgpu.memory=1000;\n' > /tmp/carve-demo-ok.txt
run mgpu check --file /tmp/carve-demo-ok.txt
printf 'emr.serverless.mgpu.core=150;\n' | { echo; echo "\$ carve mgpu check  <<< core=150"; "$carve" mgpu check || echo "(exit $?)"; }
rm -f /tmp/carve-demo-ok.txt
# Does Llama-3.1-8B at 8k context x 16 fit each H100 partition? (a model, not a measurement)
run plan fit --model llama-3.1-8b --context 8000 --concurrency 16 --gpu h100-80gb

echo
echo "== carve server: the seed scenario with the aws CLI =="
data=$(mktemp -d /tmp/carve-demo.XXXXXX)
log="$data/server.log"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$data"
}
trap cleanup EXIT

# Short autoscaling windows so the scaling part below takes seconds, not minutes (defaults: sample
# every 10 s, scale out after 180 s above the target, in after 900 s below it).
"$carve" server --listen 127.0.0.1:0 --data-dir "$data" --log-level warn \
  --autoscaling-sample-ms 1000 --scale-out-evaluation-s 5 \
  --high-resolution-scale-out-evaluation-s 5 --scale-in-evaluation-s 10 >"$log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log" | head -1)
  [[ -n "$port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
[[ -n "$port" ]] || { echo "server did not start"; cat "$log"; exit 1; }
grep 'credentials' "$log" || true
url="http://127.0.0.1:$port"
echo "dashboard: $url/ui/ (sign in with a key of $data/credentials while the demo runs)"
export AWS_SHARED_CREDENTIALS_FILE="$data/credentials" AWS_DATA_PATH="$root/contrib/aws"
export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null
sm() {
  echo "\$ aws sagemaker $1 ..." >&2
  aws sagemaker "$@" --endpoint-url "$url" --output json
}

sm create-model --model-name summarizer-model --primary-container Image=example.com/llm:1
sm create-endpoint-config --endpoint-config-name multi-model-partitioned --production-variants '[{
    "VariantName": "AllTraffic", "InstanceType": "ml.p4d.24xlarge", "InitialInstanceCount": 1,
    "AcceleratorPartitionLayouts": [
      {"AcceleratorPartitionTypes": ["mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"]}]}]'
sm create-endpoint --endpoint-name multi-model-partitioned \
  --endpoint-config-name multi-model-partitioned
echo "waiting for InService (8 GPUs carved one after another)..."
for _ in $(seq 1 120); do
  status=$(aws sagemaker describe-endpoint --endpoint-name multi-model-partitioned \
    --endpoint-url "$url" --query EndpointStatus --output text)
  [[ "$status" == "InService" || "$status" == "Failed" ]] && break
  sleep 1
done
sm wait endpoint-in-service --endpoint-name multi-model-partitioned
sm describe-endpoint --endpoint-name multi-model-partitioned \
  --query '{Status: EndpointStatus, Config: EndpointConfigName}'

for pair in summarizer:mig-4g.20gb classifier:mig-2g.10gb guardrail:mig-1g.5gb; do
  name=${pair%%:*}
  type=${pair#*:}
  sm create-inference-component --inference-component-name "$name" \
    --endpoint-name multi-model-partitioned --variant-name AllTraffic \
    --specification "ModelName=summarizer-model,ComputeResourceRequirements={AcceleratorPartitionType=$type,NumberOfAcceleratorDevicesRequired=1,NumberOfCpuCoresRequired=1,MinMemoryRequiredInMb=2048}" \
    --runtime-config CopyCount=1
done
echo "scaling guardrail to 10 copies: the endpoint has 8 mig-1g.5gb partitions"
sm update-inference-component-runtime-config --inference-component-name guardrail \
  --desired-runtime-config CopyCount=10
for _ in $(seq 1 50); do
  current=$(aws sagemaker describe-inference-component --inference-component-name guardrail \
    --endpoint-url "$url" --query RuntimeConfig.CurrentCopyCount --output text)
  [[ "$current" == "8" ]] && break
  sleep 0.2
done
sm describe-inference-component --inference-component-name guardrail \
  --query '{Status: InferenceComponentStatus, Copies: RuntimeConfig, Waiting: StatusMessage}'

# GET on a native route, SigV4-signed as the aws CLI signs (the default profile); prints JSON.
signed_get() {
  python3 - "$url" "$1" <<'PY'
import configparser, os, sys, urllib.request
import botocore.auth, botocore.awsrequest, botocore.credentials
cp = configparser.ConfigParser()
cp.read(os.environ["AWS_SHARED_CREDENTIALS_FILE"])
creds = botocore.credentials.Credentials(cp["default"]["aws_access_key_id"],
                                         cp["default"]["aws_secret_access_key"])
req = botocore.awsrequest.AWSRequest(method="GET", url=sys.argv[1] + sys.argv[2])
botocore.auth.SigV4Auth(creds, "sagemaker", "us-east-1").add_auth(req)
p = req.prepare()
sys.stdout.write(urllib.request.urlopen(
    urllib.request.Request(p.url, headers=dict(p.headers))).read().decode())
PY
}

echo
echo "== carve map: GET $url/v1/endpoints/multi-model-partitioned/carve =="
signed_get /v1/endpoints/multi-model-partitioned/carve > "$data/carve.json"
python3 - "$data/carve.json" <<'PY'
import json, sys
carve = json.load(open(sys.argv[1]))
print(f"endpoint {carve['endpoint']} ({carve['status']})")
for node in carve["nodes"]:
    print(f"  {node['name']} ({node['instance_type']}): {node['vcpus_used']:g}/{node['vcpus']} "
          f"vCPUs, {node['memory_used_mib']}/{node['memory_mib']} MiB host memory")
    for gpu in node["gpus"]:
        cells = [f"{p['partition_type'] or 'whole'}={(p['occupant'] or '-').split('/')[-1]}"
                 for p in gpu["partitions"]]
        print(f"    GPU {gpu['index']} ({gpu['gpu']}): " + "  ".join(cells))
PY

echo
echo "== the copies are processes: GET $url/v1/nodes (with each process's binding) =="
signed_get /v1/nodes > "$data/nodes.json"
python3 - "$data/nodes.json" <<'PY'
import json, sys, urllib.request
nodes = json.load(open(sys.argv[1]))
for node in nodes["Nodes"]:
    print(f"  {node['NodeId']} ({node['InstanceType']}, {node['Status']}, driver {node['Driver']})")
    for w in node["Workloads"]:
        try:
            with open(f"/proc/{w['pid']}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            dev = env.get(b"CUDA_VISIBLE_DEVICES", b"?").decode()
        except OSError:
            dev = "?"
        try:
            ping = urllib.request.urlopen(f"http://{w['address']}/ping", timeout=5).status
        except OSError as e:
            ping = e
        print(f"    {w['id'].split('/', 1)[1]:<34} pid {w['pid']:<7} port {w['port']:<6} "
              f"{w['state']:<8} /ping {ping}  CUDA_VISIBLE_DEVICES={dev}")
PY

echo
echo "== InvokeEndpoint, routed by inference component =="
echo "\$ aws sagemaker-runtime invoke-endpoint --endpoint-name multi-model-partitioned --inference-component-name summarizer ..."
aws sagemaker-runtime invoke-endpoint --endpoint-url "$url" \
  --endpoint-name multi-model-partitioned --inference-component-name summarizer \
  --content-type application/json \
  --body '{"inputs": "Summarize: one GPU, many models.", "parameters": {"max_new_tokens": 8}}' \
  "$data/invoke-out.json" --output json
echo "response body: $(cat "$data/invoke-out.json")"

echo
echo "== mGPU: a queue with shares of one card per task =="
CARVE_ENDPOINT_URL="$url" "$root/scripts/demo-mgpu.sh" "$build"

echo
echo "== carve bench: the same model on a mig-3g.40gb of the p5 and on a whole A100 =="
echo "(carve testmodel simulates Llama-3.1-8B from the GPU specs through the planner's model:"
echo " the figures below are the model's pacing measured through the real router, not a GPU)"
out="${CARVE_DEMO_OUT:-$build/demo}"
mkdir -p "$out"
sm create-model --model-name bench-llama \
  --primary-container 'Image=carve/testmodel,Environment={CARVE_MODEL=llama-3.1-8b}' >/dev/null
sm create-endpoint-config --endpoint-config-name bench-p5 --production-variants '[{
    "VariantName": "AllTraffic", "InstanceType": "ml.p5.48xlarge", "InitialInstanceCount": 1,
    "AcceleratorPartitionLayouts": [{"AcceleratorPartitionTypes": ["mig-3g.40gb", "mig-3g.40gb"]}]}]' >/dev/null
sm create-endpoint-config --endpoint-config-name bench-a100 --production-variants '[{
    "VariantName": "AllTraffic", "InstanceType": "ml.p4d.24xlarge", "InitialInstanceCount": 1}]' >/dev/null
sm create-endpoint --endpoint-name bench-p5 --endpoint-config-name bench-p5 >/dev/null
sm create-endpoint --endpoint-name bench-a100 --endpoint-config-name bench-a100 >/dev/null
wait_status() {  # kind name query want
  for _ in $(seq 1 240); do
    got=$(aws sagemaker "describe-$1" "--$1-name" "$2" --endpoint-url "$url" --query "$3" --output text)
    [[ "$got" == "$4" ]] && return 0
    [[ "$got" == "Failed" ]] && { echo "$1 $2 failed"; return 1; }
    sleep 0.5
  done
  echo "$1 $2 did not reach $4 (last: $got)"; return 1
}
wait_status endpoint bench-p5 EndpointStatus InService
wait_status endpoint bench-a100 EndpointStatus InService
sm create-inference-component --inference-component-name bench-part --endpoint-name bench-p5 \
  --variant-name AllTraffic --runtime-config CopyCount=1 \
  --specification "ModelName=bench-llama,ComputeResourceRequirements={AcceleratorPartitionType=mig-3g.40gb,NumberOfAcceleratorDevicesRequired=1,NumberOfCpuCoresRequired=1,MinMemoryRequiredInMb=4096}" >/dev/null
sm create-inference-component --inference-component-name bench-whole --endpoint-name bench-a100 \
  --variant-name AllTraffic --runtime-config CopyCount=1 \
  --specification "ModelName=bench-llama,ComputeResourceRequirements={NumberOfAcceleratorDevicesRequired=1,NumberOfCpuCoresRequired=1,MinMemoryRequiredInMb=4096}" >/dev/null
wait_status inference-component bench-part InferenceComponentStatus InService
wait_status inference-component bench-whole InferenceComponentStatus InService
bench=(--endpoint-url "$url" --credentials "$AWS_SHARED_CREDENTIALS_FILE" --model llama-3.1-8b
       --scenario "D(200,50)" --concurrency 1,4,16 --requests 16)
echo "\$ carve bench --endpoint bench-p5 --component bench-part --instance-type ml.p5.48xlarge --partition mig-3g.40gb ..."
"$carve" bench "${bench[@]}" --endpoint bench-p5 --component bench-part \
  --instance-type ml.p5.48xlarge --partition mig-3g.40gb --target-name "H100 mig-3g.40gb" \
  --out "$out/bench-h100-3g.40gb"
echo "\$ carve bench --endpoint bench-a100 --component bench-whole --instance-type ml.p4d.24xlarge --gpus 1 ..."
"$carve" bench "${bench[@]}" --endpoint bench-a100 --component bench-whole \
  --instance-type ml.p4d.24xlarge --gpus 1 --target-name "A100-40GB whole" \
  --out "$out/bench-a100"
echo "\$ carve bench compare A.json B.json"
"$carve" bench compare "$out/bench-h100-3g.40gb/bench.json" "$out/bench-a100/bench.json" \
  --out "$out/compare"
echo "plots and tables: $(ls "$out"/compare/*.svg "$out"/bench-*/*.svg 2>/dev/null | tr '\n' ' ')"

echo
echo "== Application Auto Scaling: a target-tracking policy follows carve bench's load =="
echo "(demo windows: sampled every 1 s, out after 5 s above the target, in after 10 s below it)"
sm create-inference-component --inference-component-name chat --endpoint-name bench-p5 \
  --variant-name AllTraffic --runtime-config CopyCount=1 \
  --specification "ModelName=bench-llama,ComputeResourceRequirements={AcceleratorPartitionType=mig-3g.40gb,NumberOfAcceleratorDevicesRequired=1,NumberOfCpuCoresRequired=1,MinMemoryRequiredInMb=4096}" >/dev/null
wait_status inference-component chat InferenceComponentStatus InService
aas() {
  echo "\$ aws application-autoscaling $1 ..." >&2
  aws application-autoscaling "$@" --endpoint-url "$url" --output json
}
aas register-scalable-target --service-namespace sagemaker --resource-id inference-component/chat \
  --scalable-dimension sagemaker:inference-component:DesiredCopyCount \
  --min-capacity 1 --max-capacity 4 >/dev/null
aas put-scaling-policy --policy-name concurrency --policy-type TargetTrackingScaling \
  --service-namespace sagemaker --resource-id inference-component/chat \
  --scalable-dimension sagemaker:inference-component:DesiredCopyCount \
  --target-tracking-scaling-policy-configuration '{"TargetValue": 2,
    "PredefinedMetricSpecification": {"PredefinedMetricType":
      "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"},
    "ScaleOutCooldown": 5, "ScaleInCooldown": 5}' >/dev/null
copies() {
  aws sagemaker describe-inference-component --inference-component-name chat --endpoint-url "$url" \
    --query 'RuntimeConfig.[DesiredCopyCount,CurrentCopyCount]' --output text | tr '\t' /
}
echo "\$ carve bench --endpoint bench-p5 --component chat --concurrency 8 ... (in the background)"
"$carve" bench --endpoint-url "$url" --credentials "$AWS_SHARED_CREDENTIALS_FILE" \
  --model llama-3.1-8b --scenario "D(200,200)" --concurrency 8 --requests 96 \
  --endpoint bench-p5 --component chat --instance-type ml.p5.48xlarge --partition mig-3g.40gb \
  --out "$out/bench-autoscaling" >/dev/null &
bench_pid=$!
for _ in $(seq 1 120); do
  echo "  copies (desired/current): $(copies)"
  kill -0 "$bench_pid" 2>/dev/null || break
  sleep 2
done
wait "$bench_pid"
echo "load over; waiting for scale-in to the minimum"
for _ in $(seq 1 60); do
  c=$(copies)
  echo "  copies (desired/current): $c"
  [[ "$c" == "1/1" ]] && break
  sleep 2
done
echo "\$ aws application-autoscaling describe-scaling-activities --resource-id inference-component/chat ..."
aws application-autoscaling describe-scaling-activities --endpoint-url "$url" \
  --service-namespace sagemaker --resource-id inference-component/chat \
  --query 'ScalingActivities[].[StatusCode,Description,Cause]' --output text

echo
echo "stopping the server (it stops every copy and task process it started)"
kill -TERM "$server_pid"
wait "$server_pid"
server_pid=""
echo "demo done"
