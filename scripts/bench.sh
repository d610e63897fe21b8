#!/usr/bin/env bash
# `make bench`: runs every benchmark binary the build produced and prints its figures.
# Benchmarks want a Release build: `make bench BUILD_DIR=build-release BUILD_TYPE=Release`.
# The figures quoted in docs/benchmarks.md were produced this way; see that file per benchmark.
set -euo pipefail
build=${1:-build}
shopt -s nullglob
ran=0
for b in "$build"/bench/*_bench; do
  [ -x "$b" ] || continue
  echo "== $b"
  "$b"
  ran=$((ran + 1))
done
echo "ran $ran benchmark binaries"
# The runtime router against direct calls and nginx (installs nginx-light when missing).
if [ -x "$build/bench/http_load" ] && [ -x "$build/bench/router_harness" ]; then
  echo "== bench/router_overhead.sh"
  "$(dirname "$0")/../bench/router_overhead.sh" "$build"
fi
