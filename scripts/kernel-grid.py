#!/usr/bin/env python3
"""Collects the distinct op signatures of lowered-graph files into one JSON array, the
grid that `dtsim calibrate --ops FILE` measures.

Usage: kernel-grid.py OUT.json GRAPH.tasks.jsonl...
(write the graphs with `dtsim lower SCENARIO --set ... --out g.json`; see
docs/cost-database.md, "Measured figures").
"""
import json
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    ops, seen = [], set()
    for path in argv[2:]:
        with open(path) as f:
            for line in f:
                o = json.loads(line)
                for op in o.get("ops", []) if "op_list" in o else []:
                    key = json.dumps({k: v for k, v in op.items() if k != "name"}, sort_keys=True)
                    if key not in seen:
                        seen.add(key)
                        ops.append(op)
    with open(argv[1], "w") as f:
        json.dump(ops, f, indent=1)
        f.write("\n")
    print(f"{argv[1]}: {len(ops)} distinct op signatures")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
