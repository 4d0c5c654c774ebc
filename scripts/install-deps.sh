#!/usr/bin/env bash
# Installs the Debian 12 packages gpuslice builds and tests with (Ubuntu
# 22.04 lacks toml++: docs/dependencies.md). Idempotent: does nothing when
# everything is already there.
set -euo pipefail
packages=(
  build-essential cmake pkg-config git ca-certificates
  nlohmann-json3-dev libyaml-dev libtomlplusplus-dev libspdlog-dev libfmt-dev libcli11-dev catch2
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libcurl4-openssl-dev
  clang libfuzzer-14-dev libclang-rt-14-dev
  libseccomp-dev libcap-dev checkpolicy semodule-utils
  prometheus
  debhelper lintian rpm rpmlint file
  runc crun containerd podman netavark busybox-static debootstrap iproute2 rsync strace python3 python3-pytest python3-yaml python3-grpcio python3-grpc-tools python3-protobuf
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]} (run as root to install them)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
