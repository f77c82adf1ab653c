#!/usr/bin/env bash
# README command 2: install what is missing, build with warnings as errors, pass the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release -DDTSIM_WERROR=ON
cmake --build --preset release
ctest --preset release
