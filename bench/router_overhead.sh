#!/usr/bin/env bash
# Router-overhead benchmark (issue 8): one `carve testmodel` copy (fast pacing, 1-token answers)
# measured three ways in one run, each with the same closed-loop load (bench/http_load, N
# keep-alive connections, fixed duration):
#   direct  POST /invocations on the copy
#   router  POST /endpoints/bench/invocations through carve's runtime router, SigV4-signed
#           (bench/router_harness: HttpServer + Router alone in front of the copy)
#   nginx   POST /invocations through Debian's nginx as a keep-alive reverse proxy to the copy
# Prints each run's JSON, then added p50/p99 latency over direct and requests/s versus nginx.
#
# usage: bench/router_overhead.sh [BUILD_DIR]     (default build-router; needs targets carve,
#        http_load, router_harness). Env: CONNECTIONS (64), DURATION_S (10), WARMUP_S (2),
#        ROUNDS (1: the three runs are repeated and interleaved ROUNDS times), PIN (1),
#        BASELINE_HARNESS (another build's router_harness, e.g. of the commit before a change:
#        it runs as a fourth path, "before", interleaved with the others in the same rounds).
# PIN=1 (with 2+ CPUs and taskset): the load generator runs on CPU 0 and every server (copy,
# router, nginx) on the other CPUs, the same for all three paths. Unpinned, a 2-vCPU VM gives
# bimodal latencies (a path's p50 jumps by ~130 us between runs as the scheduler places the three
# processes), which swamps the difference being measured.
# Installs nginx-light with apt-get when nginx is missing.
set -euo pipefail

BUILD=${1:-build-router}
CARVE=$BUILD/carve
HTTP_LOAD=$BUILD/bench/http_load
HARNESS=$BUILD/bench/router_harness
CONNECTIONS=${CONNECTIONS:-64}
DURATION_S=${DURATION_S:-10}
WARMUP_S=${WARMUP_S:-2}
ROUNDS=${ROUNDS:-1}
PIN=${PIN:-1}
CLIENT_CPUS=() SERVER_CPUS=()
if [[ $PIN == 1 ]] && command -v taskset >/dev/null && (( $(nproc) >= 2 )); then
  CLIENT_CPUS=(taskset -c 0) SERVER_CPUS=(taskset -c "1-$(($(nproc) - 1))")
fi
for b in "$CARVE" "$HTTP_LOAD" "$HARNESS"; do
  [[ -x $b ]] || { echo "missing $b: build targets carve http_load router_harness" >&2; exit 2; }
done
if ! command -v nginx >/dev/null && [[ ! -x /usr/sbin/nginx ]]; then
  apt-get install -y nginx-light >/dev/null || apt-get install -y nginx >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

TMP=$(mktemp -d)
chmod 755 "$TMP"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_http() {  # URL: polls until it answers (any status) or 20 s pass
  local deadline=$((SECONDS + 20))
  until curl -s -o /dev/null "$1"; do
    ((SECONDS < deadline)) || { echo "no answer from $1" >&2; exit 1; }
    sleep 0.1
  done
}

COPY_PORT=$(free_port)
"${SERVER_CPUS[@]}" "$CARVE" testmodel --port "$COPY_PORT" --speed 1000000 --threads 256 >"$TMP/testmodel.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$COPY_PORT/ping"

ROUTER_PORT=$(free_port)
AK=AKIABENCH00000000000
SK=benchsecret0000000000000000000000000000
"${SERVER_CPUS[@]}" "$HARNESS" --copy "127.0.0.1:$COPY_PORT" --port "$ROUTER_PORT" --access-key "$AK" --secret "$SK" \
  >"$TMP/router.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$ROUTER_PORT/ping"

BEFORE_PORT=
if [[ -n ${BASELINE_HARNESS:-} ]]; then
  BEFORE_PORT=$(free_port)
  "${SERVER_CPUS[@]}" "$BASELINE_HARNESS" --copy "127.0.0.1:$COPY_PORT" --port "$BEFORE_PORT" \
    --access-key "$AK" --secret "$SK" >"$TMP/router-before.log" 2>&1 &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$BEFORE_PORT/ping"
fi

NGINX_PORT=$(free_port)
mkdir -p "$TMP/nginx" && chmod 777 "$TMP/nginx"
cat >"$TMP/nginx.conf" <<CONF
daemon off;
worker_processes auto;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $TMP/nginx/body;
  proxy_temp_path $TMP/nginx/proxy;
  fastcgi_temp_path $TMP/nginx/fastcgi;
  uwsgi_temp_path $TMP/nginx/uwsgi;
  scgi_temp_path $TMP/nginx/scgi;
  upstream copy { server 127.0.0.1:$COPY_PORT; keepalive 256; }
  server {
    listen 127.0.0.1:$NGINX_PORT;
    keepalive_requests 1000000;
    location / {
      proxy_pass http://copy;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
CONF
"${SERVER_CPUS[@]}" "$NGINX" -c "$TMP/nginx.conf" -p "$TMP/nginx" &
PIDS+=($!)
wait_http "http://127.0.0.1:$NGINX_PORT/ping"

BODY='{"inputs":"x","parameters":{"max_new_tokens":1}}'
common=(--connections "$CONNECTIONS" --duration-s "$DURATION_S" --warmup-s "$WARMUP_S"
        --body "$BODY" --header "Content-Type: application/json")
run() {  # LABEL: one http_load run, JSON appended to results
  case $1 in
    direct) "${CLIENT_CPUS[@]}" "$HTTP_LOAD" --label direct --target "127.0.0.1:$COPY_PORT" "${common[@]}" ;;
    router) "${CLIENT_CPUS[@]}" "$HTTP_LOAD" --label router --target "127.0.0.1:$ROUTER_PORT" "${common[@]}" \
              --path /endpoints/bench/invocations --sigv4 "$AK:$SK" \
              --header "X-Amzn-SageMaker-Inference-Component: bench" ;;
    before) "${CLIENT_CPUS[@]}" "$HTTP_LOAD" --label before --target "127.0.0.1:$BEFORE_PORT" "${common[@]}" \
              --path /endpoints/bench/invocations --sigv4 "$AK:$SK" \
              --header "X-Amzn-SageMaker-Inference-Component: bench" ;;
    nginx)  "$HTTP_LOAD" --label nginx --target "127.0.0.1:$NGINX_PORT" "${common[@]}" ;;
  esac
}
: >"$TMP/results.jsonl"
for ((r = 0; r < ROUNDS; r++)); do
  for which in direct router ${BEFORE_PORT:+before} nginx; do run "$which" | tee -a "$TMP/results.jsonl"; done
done

if ((${#CLIENT_CPUS[@]})); then
  echo "pinned: load generator on CPU 0, servers on CPUs 1-$(($(nproc) - 1))"
else
  echo "not pinned"
fi
python3 - "$TMP/results.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in runs:
    by.setdefault(r["label"], []).append(r)
med = {k: {m: statistics.median(x[m] for x in v) for m in ("p50_us", "p99_us", "rps", "errors")}
       for k, v in by.items()}
d, rt, ng = med["direct"], med["router"], med["nginx"]
print(f"\nconnections={runs[0]['connections']} duration={runs[0]['duration_s']}s "
      f"rounds={len(by['direct'])} (medians)")
print(f"{'path':8} {'p50 us':>10} {'p99 us':>10} {'req/s':>10} {'errors':>7}")
for k in ("direct", "router", "before", "nginx"):
    if k not in med:
        continue
    m = med[k]
    print(f"{k:8} {m['p50_us']:10.1f} {m['p99_us']:10.1f} {m['rps']:10.0f} {m['errors']:7.0f}")
print(f"router added: p50 {rt['p50_us'] - d['p50_us']:+.1f} us, p99 {rt['p99_us'] - d['p99_us']:+.1f} us"
      f"  (target p50 <= 200 us)")
print(f"nginx  added: p50 {ng['p50_us'] - d['p50_us']:+.1f} us, p99 {ng['p99_us'] - d['p99_us']:+.1f} us")
print(f"router req/s = {100 * rt['rps'] / ng['rps']:.0f}% of nginx (target >= 80%)")
if "before" in med:
    b = med["before"]
    print(f"router vs before: p50 {rt['p50_us'] - b['p50_us']:+.1f} us, p99 {rt['p99_us'] - b['p99_us']:+.1f} us,"
          f" req/s {100 * rt['rps'] / b['rps']:.0f}% of before")
PY
