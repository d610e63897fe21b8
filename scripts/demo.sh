#!/usr/bin/env bash
# `make demo`: a short scripted tour of carve on its embedded defaults.
set -euo pipefail
build=${1:-build}
carve="$build/carve"
echo "carve demo: offline catalog and layout engine"
