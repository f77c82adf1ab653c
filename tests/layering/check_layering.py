#!/usr/bin/env python3
"""Checks every quoted #include of the project against the layer table of docs/architecture.md."""

import argparse
import os
import posixpath
import re
import sys

HEADER = ["layer", "folder", "may include"]
NOTHING = {"—", "-"}
EVERYTHING = "*"
SOURCE_EXTENSIONS = (".h", ".hh", ".cc", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]*)"')


class TableError(Exception):
    pass


def cells(line):
    """The cells of a Markdown table row, stripped of spaces and backticks."""
    return [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]


def parse_table(doc):
    """Returns {folder: (layer, allowed folders, allowed files, everything)} from DOC."""
    try:
        with open(doc, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise TableError(f"{doc}: cannot read the layer table: {e.strerror}")
    starts = [i for i, l in enumerate(lines) if l.lstrip().startswith("|") and cells(l) == HEADER]
    if len(starts) != 1:
        found = "no" if not starts else f"{len(starts)}"
        raise TableError(f"{doc}: expected one table with header | layer | folder | may include |, found {found}")
    start = starts[0]
    if start + 1 >= len(lines) or not re.fullmatch(r"\|?(\s*:?-+:?\s*\|){2}\s*:?-+:?\s*\|?", lines[start + 1].strip()):
        raise TableError(f"{doc}:{start + 2}: the layer table's header is not followed by a |---|---|---| row")
    rows = []
    for number, line in enumerate(lines[start + 2:], start + 3):
        if not line.lstrip().startswith("|"):
            break
        rows.append((number, cells(line)))
    if not rows:
        raise TableError(f"{doc}:{start + 1}: the layer table has no rows")

    table = {}
    for number, row in rows:
        where = f"{doc}:{number}"
        if len(row) != 3 or not row[0] or not row[1] or not row[2]:
            raise TableError(f"{where}: a row needs three non-empty cells: layer | folder | may include")
        layer, folder, allowed = row
        folder = folder.rstrip("/")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", folder) or folder in (".", ".."):
            raise TableError(f"{where}: folder {row[1]!r} must be one top-level folder such as sim/")
        if folder in table:
            raise TableError(f"{where}: folder {folder}/ is listed twice")
        table[folder] = (layer, allowed)

    parsed = {}
    for folder, (layer, allowed) in table.items():
        folders, files, everything = [], [], False
        if allowed == EVERYTHING:
            everything = True
        elif allowed not in NOTHING:
            for entry in (e.strip().strip("`") for e in allowed.split(",")):
                top = entry.split("/", 1)[0]
                if top not in table:
                    raise TableError(f"{doc}: layer {layer}: {entry!r} is not in a folder of the table")
                if entry.rstrip("/") == top:
                    folders.append(top)
                else:
                    files.append(posixpath.normpath(entry))
        parsed[folder] = (layer, folders, files, everything)
    return parsed


def check_file(root, path, folder, rule, table):
    """Yields one message per forbidden include of one source file."""
    layer, folders, files, everything = rule
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            header = match.group(1)
            # "name.moc": what Qt's moc generates from this very file, in the build folder.
            if header.endswith(".moc") and "/" not in header:
                continue
            target = posixpath.normpath(header)
            top = target.split("/", 1)[0]
            if top not in table or "/" not in target:
                yield (f'{relative}:{number}: {layer} may not include "{header}" '
                       f"(write it from the repository root, e.g. \"{folder}/...\")")
            elif not (everything or top == folder or top in folders or target in files):
                permitted = ", ".join([f"{folder}/"] + [f"{d}/" for d in folders] + files)
                yield f'{relative}:{number}: {layer} may not include "{header}" (allowed: {permitted})'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", required=True, help="repository root")
    parser.add_argument("--table", required=True, help="the Markdown file holding the layer table")
    args = parser.parse_args(argv)
    try:
        table = parse_table(args.table)
    except TableError as e:
        print(f"check_layering: {e}", file=sys.stderr)
        return 2
    if not os.path.isdir(args.root):
        print(f"check_layering: {args.root}: not a directory", file=sys.stderr)
        return 2

    violations, scanned = [], 0
    for folder in sorted(table):
        for directory, subdirectories, names in os.walk(os.path.join(args.root, folder)):
            subdirectories.sort()
            for name in sorted(names):
                if name.endswith(SOURCE_EXTENSIONS):
                    scanned += 1
                    violations += check_file(args.root, os.path.join(directory, name), folder, table[folder], table)
    if scanned == 0:
        print(f"check_layering: {args.root}: no source files under any folder of the table "
              f"({', '.join(f + '/' for f in sorted(table))})", file=sys.stderr)
        return 2
    for line in violations:
        print(line)
    if violations:
        offenders = len({line.split(":", 1)[0] for line in violations})
        print(f"check_layering: {len(violations)} forbidden include(s) in {offenders} file(s); "
              f"{scanned} files checked against {args.table}")
        return 1
    print(f"check_layering: OK, {scanned} files checked against {args.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
