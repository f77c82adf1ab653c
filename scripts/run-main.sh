#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job on a bundled scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --target dtsim
scenario=${1:-scenarios/examples/gpt3-175b-1024xA100.json}
./build/release/cli/dtsim run "$scenario" --out "out/$(basename "$scenario" .json)"
