#!/usr/bin/env python3
"""The memory estimate against the peak RSS it predicts, on the bundled examples.

For each scenario, `dtsim run --max-memory 1B` refuses the run and says the estimate it
made before lowering (the run's own, with its outputs), and `dtsim run` (its outputs to a
scratch folder) is measured by its peak resident set (the kernel's ru_maxrss of the child).
Exit 1 when any estimate is off by more than --tolerance.

    python3 tests/reliability/memory_estimate.py --dtsim build/release/cli/dtsim \
        scenarios/examples/*.json [--set KEY=VALUE ...] [--tolerance 0.25]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def parse_size(text):
    m = re.fullmatch(r"([0-9.]+)\s*([KMGT]iB|B)", text.strip())
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return float(m.group(1)) * UNITS[m.group(2)]


def estimate(dtsim, scenario, sets, folder):
    out = subprocess.run([dtsim, "--max-memory", "1B", "run", scenario, *sets, "--quiet",
                          "--out", folder], capture_output=True, text=True)
    m = re.search(r"this run needs an estimated (\S+) \(", out.stderr)
    if out.returncode != 2 or not m:
        raise RuntimeError(f"dtsim run {scenario} was not refused with an estimate "
                           f"({out.returncode}):\n{out.stderr}")
    return parse_size(m.group(1))


def peak_rss(dtsim, scenario, sets, folder):
    proc = subprocess.Popen([dtsim, "run", scenario, *sets, "--quiet", "--no-timing",
                             "--out", folder], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"dtsim run {scenario} failed: status {status}")
    return usage.ru_maxrss * 1024  # kilobytes on Linux


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtsim", required=True)
    ap.add_argument("--tolerance", type=float, default=0.25)
    ap.add_argument("--set", action="append", default=[], dest="sets")
    ap.add_argument("scenarios", nargs="+")
    args = ap.parse_args()
    sets = [x for kv in args.sets for x in ("--set", kv)]
    worst = 0.0
    failed = []
    print(f"{'scenario':44} {'estimate':>10} {'peak RSS':>10} {'error':>7}")
    with tempfile.TemporaryDirectory(prefix="dtsim_memory_estimate_") as scratch:
        for i, scenario in enumerate(args.scenarios):
            e = estimate(args.dtsim, scenario, sets, os.path.join(scratch, str(i)))
            p = peak_rss(args.dtsim, scenario, sets, os.path.join(scratch, str(i)))
            error = e / p - 1
            worst = max(worst, abs(error))
            name = os.path.basename(scenario)
            print(f"{name:44} {e / 2**20:8.1f}Mi {p / 2**20:8.1f}Mi {error:+7.1%}", flush=True)
            if abs(error) > args.tolerance:
                failed.append(name)
    print(f"worst |error| {worst:.1%} (tolerance {args.tolerance:.0%})")
    if failed:
        print("beyond the tolerance: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
