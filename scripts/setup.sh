#!/usr/bin/env bash
# Installs the Debian 12 packages carve needs to build and test, only those that are missing.
# Safe to run repeatedly; `make` calls it before configuring.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config g++ clang clang-tidy clang-format
  libclang-rt-14-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev libsqlite3-dev sqlite3 libssl-dev
  libcpp-httplib-dev libboost-dev zlib1g-dev python3 curl procps
  etcd-server etcd-client openssl
  podman runc netavark iptables
  ccache lld
  bubblewrap
)
# ccache: every build compiles through it (cmake/ccache.cmake), so CI's clean clone and the
# sanitizer builds reuse the objects of the developer's own build (docs/testing.md).
# lld: executables link with it (cmake/linker.cmake), 4-5x faster than GNU ld; links are what
# the cache cannot skip.
# etcd-server, etcd-client: the replicated store (`--store etcd://...`, docs/ha.md); its tests
# start their own members on loopback (the package's etcd.service is not used); openssl makes the
# certificates of the TLS test.
# podman, runc, netavark, iptables: tests/integration/container_test.py runs a real image as an
# inference-component copy (runc because crun refuses hybrid cgroup hosts; netavark and iptables
# publish the copy's port).
# bubblewrap: the tenant sandbox (docs/security.md, "Sandbox"): the agent runs every process it
# launches for a tenant under bwrap, as that account's uid; tests/integration/sandbox_test.py.
# libclang-rt-14-dev: Clang's sanitizer and libFuzzer runtimes (`make fuzz`); GCC's sanitizer
# runtimes (`make sanitize`) come with g++.
# nginx-light (the reverse proxy the router is measured against) is installed by
# bench/router_overhead.sh itself: `make test` does not need a web server on the machine.

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The integration tests drive carve with the stock AWS clients. Images that ship them through
# pip (as the development machines do) need nothing; a bare Debian gets them from apt.
python3 -c 'import boto3' 2>/dev/null || missing+=(python3-boto3)
command -v aws >/dev/null 2>&1 || missing+=(awscli)
# The Ray stand-in (tests/integration/fake_ray.py) reads Serve configs, which are YAML.
python3 -c 'import yaml' 2>/dev/null || missing+=(python3-yaml)
# The dashboard (ui/) is bundled with Node.js at build time (Debian 12's nodejs 18 suffices; a
# newer one installed some other way is used as is) and tested in Debian's Chromium, with a font
# so that its screenshots show text.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
dpkg-query -W -f='${Status}' fonts-dejavu-core 2>/dev/null | grep -q "install ok installed" ||
  missing+=(fonts-dejavu-core)
# promtool (Debian ships it in the prometheus package) lints GET /metrics in the tests.
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
