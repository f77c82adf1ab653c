#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz (built in the asan preset: clang-16, ASan+UBSan)
# from a seed corpus of the bundled scenarios and the graphs `dtsim lower` writes for the
# small ones; fails on any crash, leak or timeout, leaving the input under build/asan/fuzz.
#
#   scripts/fuzz.sh [--target scenario|lowered_graph|cost_database|all] [--seconds N] [--runs N]
#                   [--seed S] [--jobs J]
#
# --seconds bounds each target's time (default 60); --runs bounds its inputs instead, which
# with a fixed --seed makes a run repeatable (CI: scripts/fuzz.sh --runs ... --seed 1).
set -euo pipefail
cd "$(dirname "$0")/.."

target=all seconds=60 runs="" seed=1 jobs=1
while (($#)); do
  case $1 in
    --target) target=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) echo "fuzz.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
case $target in
  scenario | lowered_graph | cost_database) targets=("$target") ;;
  all) targets=(scenario lowered_graph cost_database) ;;
  *) echo "fuzz.sh: --target must be scenario, lowered_graph, cost_database or all, not '$target'" >&2
     exit 2 ;;
esac

build=build/asan
[[ -f $build/CMakeCache.txt ]] || cmake --preset asan >/dev/null
cmake --build --preset asan --target dtsim scenario_fuzzer lowered_graph_fuzzer cost_database_fuzzer

work=$build/fuzz
rm -rf "$work/seeds"
mkdir -p "$work/seeds/scenario" "$work/seeds/lowered_graph" "$work/seeds/cost_database" "$work/crashes"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Seeds: every bundled scenario; lowered graphs of the examples small enough to mutate; a
# small cost database (tests/fuzz/seeds).
cp scenarios/examples/*.json scenarios/validation/*.json scenarios/validation/real/*.json \
  scenarios/bench/*.json tests/golden/*.json "$work/seeds/scenario/"
cp tests/fuzz/seeds/cost_database/*.json "$work/seeds/cost_database/"
for example in small-transformer-2xcpu taskgraph-dp-overlap allreduce-8xH100-nvswitch; do
  "$build/cli/dtsim" lower "scenarios/examples/$example.json" --quiet \
    --out "$work/seeds/lowered_graph/$example.json"
  rm "$work/seeds/lowered_graph/$example.json"
done
# A dictionary of the scenario format's keys and names (scenarios/schema), so that mutations
# write fields the loader knows.
python3 - "$work/scenario.dict" <<'PY'
import json, sys
words = set()
def walk(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                words.update(value.keys())
            if key == "enum" and isinstance(value, list):
                words.update(v for v in value if isinstance(v, str))
            walk(value)
    elif isinstance(node, list):
        for value in node:
            walk(value)
walk(json.load(open("scenarios/schema/scenario.schema.json")))
with open(sys.argv[1], "w") as out:
    for word in sorted(words):
        out.write(json.dumps(word) + "\n")
PY

status=0
for t in "${targets[@]}"; do
  corpus=$work/corpus/$t
  mkdir -p "$corpus"
  limits=(-seed="$seed" -timeout=20 -rss_limit_mb=4096 -max_len=65536
          -artifact_prefix="$work/crashes/$t-" -print_final_stats=1)
  if [[ -n $runs ]]; then limits+=(-runs="$runs"); else limits+=(-max_total_time="$seconds"); fi
  ((jobs > 1)) && limits+=(-jobs="$jobs" -workers="$jobs")
  [[ $t == scenario || $t == cost_database ]] && limits+=(-dict="$work/scenario.dict")
  echo "fuzz.sh: $t: ${limits[*]}"
  if ! "$build/tests/fuzz/${t}_fuzzer" "${limits[@]}" "$corpus" "$work/seeds/$t"; then
    echo "fuzz.sh: $t failed; its input is in $work/crashes (replay: $build/tests/fuzz/${t}_fuzzer FILE)" >&2
    status=1
  fi
done
exit $status
