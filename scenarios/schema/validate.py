#!/usr/bin/env python3
"""Validates scenario files against the scenario JSON Schema.

Usage: validate.py SCHEMA FILE...

Prints "FILE: ok" or one line per problem, "FILE: JSON-POINTER: message", and exits 0 when
every file is valid, 1 when some is not, 2 on bad usage or an invalid schema and 3 when the
jsonschema package (python3-jsonschema) is missing.
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("validate.py: the jsonschema package (python3-jsonschema) is not installed",
          file=sys.stderr)
    sys.exit(3)


def pointer(path):
    """RFC 6901 pointer of a jsonschema error path."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print(f"{argv[1]}: invalid schema: {e}", file=sys.stderr)
        return 2
    validator = jsonschema.Draft202012Validator(schema)
    failed = 0
    for path in argv[2:]:
        try:
            with open(path, encoding="utf-8") as f:
                document = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{path}: {e}")
            failed += 1
            continue
        errors = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
        for error in errors:
            print(f"{path}: {pointer(error.absolute_path)}: {error.message}")
        if errors:
            failed += 1
        else:
            print(f"{path}: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
