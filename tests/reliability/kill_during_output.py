#!/usr/bin/env python3
"""Kills `dtsim run` with SIGKILL at seeded random points of its output phase, again and
again, and checks after every kill that the output folder holds either no result (no
summary.json) or one complete, consistent set: every file the summary's manifest lists is
there with its size and SHA-256, and no other output of a run sits beside it.

The output phase starts when the first staged temporary of the run appears in the folder;
a kill counts as mid-write when the run's temporaries or its journal are left behind. Runs
alternate between two configurations (trace on; trace off with the critical path), so a
blend of two runs, or a stale trace beside a summary without one, would be caught.
"""
import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time

OUTPUT_NAMES = {"summary.json", "ranks.csv", "links.csv", "trace.json", "critical_path.csv"}
USER_FILE = "notes-of-the-user.txt"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_folder(folder):
    """'none' (no summary), 'complete', or raises AssertionError saying what is wrong."""
    names = set(os.listdir(folder))
    assert USER_FILE in names, "the user's own file was removed"
    if "summary.json" not in names:
        return "none"
    with open(os.path.join(folder, "summary.json"), "rb") as f:
        summary = json.loads(f.read())  # a truncated summary fails here
    files = summary["outputs"]["files"]
    for name, entry in files.items():
        path = os.path.join(folder, name)
        assert name in names, f"{name} is in the manifest but missing"
        size = os.path.getsize(path)
        assert size == entry["bytes"], f"{name}: {size} bytes, the manifest says {entry['bytes']}"
        assert sha256(path) == entry["sha256"], f"{name} is not the file of this summary"
    beside = (names & OUTPUT_NAMES) - set(files) - {"summary.json"}
    assert not beside, f"{sorted(beside)} sit beside a summary that does not list them"
    return "complete"


def leftovers_of(folder, pid):
    names = os.listdir(folder)
    return [n for n in names if n.startswith(f".dtsim-tmp.{pid}.") or n == ".dtsim-pending.json"]


def wait_for_output_phase(proc, folder):
    """Seconds until the run's first temporary appears, or None when it exited first."""
    prefix = f".dtsim-tmp.{proc.pid}."
    while proc.poll() is None:
        try:
            if any(n.startswith(prefix) for n in os.listdir(folder)):
                return time.monotonic()
        except FileNotFoundError:
            pass
        time.sleep(0.0002)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dtsim", required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--work", required=True, help="a scratch folder (emptied first)")
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-mid-write", type=float, default=0.6,
                    help="the share of kills that must land mid-write")
    args = ap.parse_args()

    out = os.path.join(args.work, "out")
    subprocess.run(["rm", "-rf", args.work], check=True)
    os.makedirs(out)
    with open(os.path.join(out, USER_FILE), "w") as f:
        f.write("dtsim must never remove this\n")
    variants = [
        ["--no-timing"],
        ["--no-timing", "--critical-path", "--set", "simulation.trace=false"],
    ]

    def start(variant):
        return subprocess.Popen([args.dtsim, "run", args.scenario, "--out", out, "--quiet"] + variant,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    # How long each variant's output phase lasts, from uninterrupted runs.
    phase = []
    for variant in variants:
        spans = []
        for _ in range(3):
            proc = start(variant)
            began = wait_for_output_phase(proc, out)
            assert began is not None, "the run wrote its outputs too fast to be seen"
            # The phase ends when the set is in place: no temporary or journal is left (the
            # process still frees its memory afterwards).
            while leftovers_of(out, proc.pid) and proc.poll() is None:
                time.sleep(0.0002)
            spans.append(time.monotonic() - began)
            _, err = proc.communicate()
            assert proc.returncode == 0, err.decode()
            assert check_folder(out) == "complete"
        phase.append(sorted(spans)[1])
    print("output phase: " + ", ".join(f"{1e3 * p:.1f} ms" for p in phase))

    rng = random.Random(args.seed)
    counts = {"none": 0, "complete": 0}
    mid_write = 0
    for i in range(args.kills):
        v = i % 2
        proc = start(variants[v])
        began = wait_for_output_phase(proc, out)
        if began is not None:
            time.sleep(max(0.0, began + rng.uniform(0, phase[v]) - time.monotonic()))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        if leftovers_of(out, proc.pid):
            mid_write += 1
        try:
            counts[check_folder(out)] += 1
        except (AssertionError, ValueError, KeyError) as e:
            print(f"kill {i + 1}: inconsistent outputs: {e}", file=sys.stderr)
            return 1
    print(f"{args.kills} kills: {mid_write} mid-write; after them {counts['complete']} complete "
          f"sets, {counts['none']} folders with no result; none inconsistent")

    # A run after the kills clears their leftovers and leaves exactly one set.
    proc = start(variants[0])
    _, err = proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert check_folder(out) == "complete"
    extra = [n for n in os.listdir(out) if n.startswith(".dtsim-tmp.") or n == ".dtsim-pending.json"]
    if extra:
        print(f"leftovers after a clean run: {extra}", file=sys.stderr)
        return 1
    if mid_write < args.min_mid_write * args.kills:
        print(f"only {mid_write} of {args.kills} kills landed mid-write (wanted "
              f"{args.min_mid_write:.0%}): the kill points miss the output phase", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
