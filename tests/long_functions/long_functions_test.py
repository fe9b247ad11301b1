#!/usr/bin/env python3
"""Checks scripts/long_functions.py on made-up sources, so the length check
cannot pass everything silently: a function one line over the limit fails
--fail, one at the limit does not, an --exclude'd folder is not read, and
--skip-tests leaves out *_test.cc files only.

Usage: long_functions_test.py --root REPO. Standard library only.
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile


def function(name, lines):
    """A definition `lines` long, first line to closing brace."""
    body = [f"  int v{i} = {i};" for i in range(lines - 2)]
    return "\n".join([f"int {name}() {{", *body, "}"]) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    args = parser.parse_args()
    script = pathlib.Path(args.root) / "scripts" / "long_functions.py"
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "svc"
        (src / "tests").mkdir(parents=True)
        (src / "at_limit.cc").write_text(
            "namespace x {\n" + function("AtLimit", 80) + "}  // namespace x\n")
        (src / "tests" / "long_test.cc").write_text(function("LongTest", 120))

        def run(*extra):
            return subprocess.run(
                [sys.executable, str(script), "--fail", "--limit", "80", *extra, str(src)],
                capture_output=True, text=True)

        at_limit = run("--exclude", str(src / "tests"))
        if at_limit.returncode != 0 or at_limit.stdout:
            failures.append(f"an 80-line function failed the check: {at_limit.stdout}")
        unexcluded = run()
        if unexcluded.returncode != 1 or "LongTest" not in unexcluded.stdout:
            failures.append(f"a 120-line function outside --exclude passed: {unexcluded.stdout}")

        (src / "over_limit.cc").write_text(
            "namespace x {\n" + function("Fine", 10) + function("Svc::OverLimit", 81) + "}\n")
        over = run("--exclude", str(src / "tests"))
        if over.returncode != 1 or "Svc::OverLimit" not in over.stdout or "Fine" in over.stdout:
            failures.append(f"an 81-line function passed the check: {over.stdout}")
        if "LongTest" in over.stdout:
            failures.append("a function in an excluded folder was checked")

        (src / "long_test.cc").write_text(function("LongSideBySideTest", 120))
        (src / "support.cc").write_text(function("LongSupport", 81))
        skipped = run("--exclude", str(src / "tests"), "--skip-tests")
        if "LongSideBySideTest" in skipped.stdout:
            failures.append(f"--skip-tests checked a *_test.cc file: {skipped.stdout}")
        if skipped.returncode != 1 or "LongSupport" not in skipped.stdout:
            failures.append(f"--skip-tests left out a file that is not a test: {skipped.stdout}")
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
