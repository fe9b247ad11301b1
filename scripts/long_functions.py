#!/usr/bin/env python3
"""Lists the functions in C++ sources longer than a limit (default 80 lines).

Usage: scripts/long_functions.py [--limit N] [--fail] [--exclude DIR]... [--skip-tests] PATH...
PATH is a .cc file or a folder (its .cc files, in every subfolder but the
excluded ones). --skip-tests leaves out the tests themselves (files named
*_test.cc); the code they share (tests/support/) is checked. A function is a definition that starts at namespace scope (a line that opens
a function body outside any other braces, namespaces aside); its length runs
from its first line to its closing brace. With --fail, exits 1 when any
function is longer than the limit.
"""
import argparse
import pathlib
import re
import sys


def functions(path):
    lines = pathlib.Path(path).read_text(encoding="utf-8").split("\n")
    depth = 0
    start = None
    name = None
    in_comment = False
    for i, line in enumerate(lines):
        code = line
        if in_comment:
            if "*/" not in code:
                continue
            code = code.split("*/", 1)[1]
            in_comment = False
        code = re.sub(r"/\*.*?\*/", "", code)
        if "/*" in code:
            code, in_comment = code.split("/*", 1)[0], True
        code = re.sub(r"//.*", "", code)
        code = re.sub(r"'(\\.|[^'\\])'", "''", code)
        code = re.sub(r'R"\((.*?)\)"', '""', code)
        code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
        stripped = code.strip()
        if re.match(r"^(inline\s+)?namespace\b.*\{\s*$", stripped) or re.match(
                r"^\}\s*$", stripped) and depth == 0:
            continue
        if depth == 0 and start is None and re.match(r"^[A-Za-z~].*\(", stripped) and not re.match(
                r"^(class|struct|enum|using|typedef|template\s*<[^>]*>\s*(class|struct))\b", stripped):
            start, name = i, stripped[:90]
        opened, closed = code.count("{"), code.count("}")
        if start is not None and depth == 0 and opened == 0 and stripped.endswith(";"):
            start = None
        depth += opened - closed
        if start is not None and depth == 0 and (opened or closed):
            yield i - start + 1, name, start + 1
            start = None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--exclude", action="append", default=[], metavar="DIR",
                        help="a folder whose files are not checked (repeatable)")
    parser.add_argument("--skip-tests", action="store_true",
                        help="leave out files named *_test.cc")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    excluded = [pathlib.Path(d).resolve() for d in args.exclude]
    long = []
    for root in args.paths:
        files = [pathlib.Path(root)] if root.endswith(".cc") else sorted(
            pathlib.Path(root).rglob("*.cc"))
        for f in files:
            if any(d in f.resolve().parents for d in excluded):
                continue
            if args.skip_tests and f.name.endswith("_test.cc"):
                continue
            for length, name, line in functions(f):
                if length > args.limit:
                    long.append((length, f"{f}:{line}", name))
    for length, where, name in sorted(long, reverse=True):
        print(f"{length:5d}  {where}  {name}")
    if args.fail and long:
        print(f"{len(long)} functions longer than {args.limit} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
