#!/usr/bin/env bash
# scripts/etcd-cluster.sh DIR N -- COMMAND...: starts N etcd members on free loopback ports with
# data under DIR (on the disk DIR is on), runs COMMAND with CARVE_ETCD set to their
# etcd://HOST:PORT,... list, then stops them. Used by `make demo-ha` and by store_bench's etcd run
# (docs/benchmarks.md); the members fsync as in production.

set -euo pipefail
dir=$1 n=$2
shift 2
[[ ${1:-} == -- ]] && shift
command -v etcd >/dev/null || { echo "etcd is not installed (scripts/setup.sh)" >&2; exit 2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mkdir -p "$dir"
declare -a client peer pids
cluster=""
for ((i = 0; i < n; i++)); do
  client[i]=$(free_port) peer[i]=$(free_port)
  cluster+="${cluster:+,}b$i=http://127.0.0.1:${peer[i]}"
done
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
for ((i = 0; i < n; i++)); do
  etcd --name "b$i" --data-dir "$dir/b$i" \
    --listen-client-urls "http://127.0.0.1:${client[i]}" \
    --advertise-client-urls "http://127.0.0.1:${client[i]}" \
    --listen-peer-urls "http://127.0.0.1:${peer[i]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${peer[i]}" \
    --initial-cluster "$cluster" --initial-cluster-state new \
    --auto-compaction-mode revision --auto-compaction-retention 10000 \
    --logger zap --log-level warn >"$dir/b$i.log" 2>&1 &
  pids+=($!)
done
urls=""
for ((i = 0; i < n; i++)); do
  urls+="${urls:+,}127.0.0.1:${client[i]}"
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:${client[i]}/health" | grep -q '"true"' && break
    sleep 0.1
  done
done
CARVE_ETCD="etcd://$urls" "$@"
