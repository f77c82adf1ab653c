#!/usr/bin/env bash
# The same ring all-reduce in dtsim and in SimGrid (Debian's libsimgrid-dev), in one run:
# every round simulated in both (dtsim's fast-forward off), alternating the two, and the
# median wall times and their ratio printed per host count.
#
#   bench/peers/ring-allreduce.sh [--build DIR] [--runs N] [--bytes B] [--check] [HOSTS...]
#
# HOSTS defaults to 1024 2048; --runs (default 3) pairs per host count; --bytes the
# all-reduce size (default 1 MiB). The platform: every host's own 100 Gbps full-duplex
# link of 1 us to one switch; SimGrid with its CM02 max-min model and no cross traffic,
# dtsim with its flow model and no collective-library cost per step, so both simulate the
# transfers alone. --check fails unless their simulated times agree within 1%.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../../build/release"
runs=3
bytes=1048576
check=0
hosts=()
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --check) check=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "ring-allreduce.sh: unknown option $1" >&2; exit 2 ;;
    *) hosts+=("$1"); shift ;;
  esac
done
((${#hosts[@]})) || hosts=(1024 2048)
dtsim="$build/cli/dtsim"
peer="$build/bench/peers/simgrid_ring_allreduce"
for exe in "$dtsim" "$peer"; do
  [[ -x $exe ]] || { echo "ring-allreduce.sh: $exe not built (cmake --build --preset release; SimGrid: scripts/install-deps.sh)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
printf '%8s %12s %14s %14s %8s %16s %16s\n' hosts "bytes" "dtsim wall s" "SimGrid wall s" ratio \
  "dtsim simulated" "SimGrid simulated"
for n in "${hosts[@]}"; do
  : > "$work/times"
  for ((r = 0; r < runs; ++r)); do
    t0=$(now)
    "$peer" "$n" "$bytes" 12.5e9 1e-6 --cfg=network/model:CM02 --cfg=network/crosstraffic:0 \
      --log=root.thres:critical > "$work/simgrid.out"
    t1=$(now)
    "$dtsim" run "$here/ring-allreduce-star.json" --quiet --no-timing --out "$work/dtsim" \
      --set "cluster.nodes.0.count=$n" --set "workload.sizes=[\"${bytes}B\"]"
    t2=$(now)
    sim=$(sed -n 's/.*simulated_s=\([0-9.e+-]*\).*/\1/p' "$work/simgrid.out")
    echo "$t0 $t1 $t2 $sim" >> "$work/times"
  done
  python3 - "$n" "$bytes" "$work/times" "$work/dtsim/summary.json" "$check" <<'PY'
import json, statistics, sys
n, size, times, summary, check = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1"
rows = [list(map(float, line.split())) for line in open(times)]
peer = statistics.median(t1 - t0 for t0, t1, _, _ in rows)
ours = statistics.median(t2 - t1 for _, t1, t2, _ in rows)
peer_sim = rows[-1][3]
our_sim = json.load(open(summary))["simulated_time_s"]
print(f"{n:>8} {size:>12} {ours:14.3f} {peer:14.3f} {peer / ours:7.1f}x {our_sim:16.9f} {peer_sim:16.9f}")
if check and abs(our_sim - peer_sim) > 0.01 * peer_sim:
    sys.exit(f"ring-allreduce.sh: the simulated times differ by more than 1% ({our_sim} s, {peer_sim} s)")
PY
done
