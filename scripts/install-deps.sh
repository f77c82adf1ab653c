#!/usr/bin/env bash
# The one list of Debian packages dtsim needs; installs only what is missing (Debian 12).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache git
  clang-16 libclang-rt-16-dev
  libboost-graph-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev libsimgrid-dev
  python3 python3-jsonschema
  pkg-config libopenblas-dev libopenmpi-dev openmpi-bin libssl-dev
  qt6-base-dev libqt6opengl6-dev qt6-charts-dev fonts-dejavu-core
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi
