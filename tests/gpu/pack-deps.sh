#!/usr/bin/env bash
# Packs the header-only libraries carve-nvml-probe needs (fmt, spdlog, nlohmann/json) from this
# machine's /usr/include into DEST/include, for a GPU host that has a compiler but not them:
# carry DEST there and device-check.sh finds it (CARVE_GPU_DEPS, default <repo>/.gpu-deps).
#   tests/gpu/pack-deps.sh [DEST]     DEST defaults to <repo>/.gpu-deps (git-ignore it)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEST="${1:-$ROOT/.gpu-deps}"
mkdir -p "$DEST/include"
for dir in fmt spdlog nlohmann; do
  [[ -d "/usr/include/$dir" ]] || { echo "missing /usr/include/$dir" >&2; exit 1; }
  cp -r "/usr/include/$dir" "$DEST/include/"
done
du -sh "$DEST"
