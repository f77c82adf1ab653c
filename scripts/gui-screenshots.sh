#!/usr/bin/env bash
# Regenerates the README's screenshots of dtsim-gui (docs/images/) from bundled scenarios,
# headless, at 1280x800. Needs a release build with the GUI (scripts/test.sh makes one).
set -euo pipefail
cd "$(dirname "$0")/.."
gui=build/release/gui/dtsim-gui
out=docs/images
mkdir -p "$out"
export QT_QPA_PLATFORM=offscreen
llama=scenarios/examples/llama3-70b-64xH100.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The plan grid and compare views need a second scenario: the same with batch 16 (so
# that some plans do not apply) and with TP 4 x PP 8.
python3 - "$llama" "$tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
small = dict(d, training=dict(d["training"], global_batch=16))
json.dump(small, open(sys.argv[2] + "/llama3-70b-batch16.json", "w"), indent=2)
other = dict(d, name=d["name"] + "-tp4-pp8", parallelism=dict(d["parallelism"], tp=4, pp=8))
json.dump(other, open(sys.argv[2] + "/llama3-70b-tp4-pp8.json", "w"), indent=2)
PY
for view in summary memory timeline topology breakdown; do
  "$gui" --screenshot "$out/gui-$view.png" --view "$view" "$llama"
done
"$gui" --screenshot "$out/gui-whatif.png" --view whatif --vary training.micro_batch=1,2,4,8 "$llama"
"$gui" --screenshot "$out/gui-plangrid.png" --view plangrid "$tmp/llama3-70b-batch16.json"
"$gui" --screenshot "$out/gui-compare.png" --view compare --compare "$tmp/llama3-70b-tp4-pp8.json" "$llama"
