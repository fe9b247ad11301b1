#!/usr/bin/env python3
"""clang-tidy over omniforge's own sources, with a cache of clean results.

`make lint` runs this after the format check. Every translation unit in
BUILD_DIR/compile_commands.json under the repository (never generated code in
build*/, never a path in EXCLUDED) is checked with the checks in .clang-tidy
plus clang's thread-safety analysis (-Wthread-safety: a member declared
ABSL_GUARDED_BY(mu_) touched without mu_ held is an error). The project's own
headers are checked through the files that include them.

The cache: a file that came out clean is recorded under
~/.cache/omniforge-tidy (OMNIFORGE_TIDY_CACHE) by a hash of its preprocessed
input with comments kept (so a NOLINT counts), its compile flags, .clang-tidy,
the clang-tidy version and this script's options; an unchanged file is then
skipped. Only clean results are cached, so a finding shows on every run until
it is fixed. --no-cache ignores the cache (and records nothing).

Usage: lint.py [--build-dir DIR] [--jobs N] [--no-cache] [FILE...]
Exit status: 0 clean, 1 findings or a file clang-tidy could not check,
2 setup error (no compile_commands.json, no clang-tidy).
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Directories whose sources are not checked (and whose headers are not
# reported): none today; a path added here needs a reason beside it.
EXCLUDED = ()

# Top-level directories holding the project's own sources; services/ is split
# per service so that an excluded service's headers stay out of the filter.
SOURCE_DIRS = ("libs", "services", "cli", "tests", "bench", "fuzz")

EXTRA_ARGS = ("-Wthread-safety",)

# Cache entries not used for this long are removed after a full run.
CACHE_MAX_AGE_S = 30 * 24 * 3600


def find_tool(*names):
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def excluded(rel):
    return rel.startswith(EXCLUDED) or rel.split("/", 1)[0].startswith("build")


def header_dirs():
    """The project's own source directories, as paths relative to ROOT."""
    dirs = []
    for top in SOURCE_DIRS:
        if top != "services":
            dirs.append(top)
            continue
        for name in sorted(os.listdir(os.path.join(ROOT, top))):
            if os.path.isdir(os.path.join(ROOT, top, name)) and not excluded(f"{top}/{name}/"):
                dirs.append(f"{top}/{name}")
    return dirs


def header_filter(dirs):
    return "^" + re.escape(ROOT) + "/(" + "|".join(re.escape(d) for d in dirs) + ")/"


def compile_args(entry):
    if "arguments" in entry:
        return list(entry["arguments"])
    return shlex.split(entry["command"])


def preprocess_command(args, clangxx):
    """The compile command turned into `-E -C` to stdout, run with clang++."""
    out = [clangxx or args[0]]
    skip = False
    for arg in args[1:]:
        if skip:
            skip = False
            continue
        if arg in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if arg in ("-c", "-MD", "-MMD") or re.fullmatch(r"-o.+|-MF.+", arg):
            continue
        out.append(arg)
    return out + ["-E", "-C", "-Wno-unknown-warning-option", "-w"]


class Linter:
    def __init__(self, build_dir, tidy, clangxx, cache_dir):
        self.build_dir = build_dir
        self.tidy = tidy
        self.clangxx = clangxx
        self.cache_dir = cache_dir
        dirs = header_dirs()
        self.filter = header_filter(dirs)
        version = subprocess.run([tidy, "--version"], capture_output=True, text=True).stdout
        with open(os.path.join(ROOT, ".clang-tidy"), "rb") as f:
            config = f.read()
        seed = hashlib.sha256()
        # Nothing of the checkout's location: another clone of the same
        # sources (CI) finds the same keys.
        for part in (version.encode(), config, " ".join(dirs).encode(),
                     " ".join(EXTRA_ARGS).encode()):
            seed.update(part)
            seed.update(b"\0")
        self.seed = seed

    def cache_key(self, entry, rel):
        args = compile_args(entry)
        pre = subprocess.run(preprocess_command(args, self.clangxx), cwd=entry["directory"],
                             capture_output=True)
        if pre.returncode != 0:
            return None  # clang-tidy will report why
        h = self.seed.copy()
        h.update(rel.encode() + b"\0")
        h.update(" ".join(args[1:]).replace(ROOT, ".").encode() + b"\0")
        h.update(pre.stdout.replace(ROOT.encode(), b"."))
        return h.hexdigest()

    def check(self, entry, rel):
        """Returns (rel, output or "", from_cache)."""
        key = self.cache_key(entry, rel) if self.cache_dir else None
        stamp = os.path.join(self.cache_dir, key[:2], key) if key else None
        if stamp and os.path.exists(stamp):
            os.utime(stamp)
            return rel, "", True
        cmd = [self.tidy, "-p", self.build_dir, "--quiet", f"--header-filter={self.filter}"]
        cmd += [f"--extra-arg={a}" for a in EXTRA_ARGS] + [entry["file"]]
        run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        # clang-tidy prints "N warnings generated." for suppressed ones; only
        # diagnostics it shows count.
        lines = [l for l in (run.stdout + run.stderr).splitlines()
                 if not re.fullmatch(r"\d+ warnings? (and \d+ errors? )?generated\.", l)]
        output = "\n".join(lines).strip()
        if run.returncode != 0 and not output:
            output = f"{rel}: clang-tidy exited with {run.returncode}"
        if run.returncode == 0 and not re.search(r"(warning|error):", output) and stamp:
            os.makedirs(os.path.dirname(stamp), exist_ok=True)
            open(stamp, "w").close()
            output = ""
        return rel, output, False

    def prune(self):
        now = time.time()
        for dirpath, _, names in os.walk(self.cache_dir):
            for name in names:
                path = os.path.join(dirpath, name)
                if now - os.path.getmtime(path) > CACHE_MAX_AGE_S:
                    os.remove(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("files", nargs="*")
    opts = parser.parse_args()

    build_dir = os.path.abspath(opts.build_dir)
    db_path = os.path.join(build_dir, "compile_commands.json")
    if not os.path.exists(db_path):
        print(f"lint: {db_path} missing (configure first: make configure)", file=sys.stderr)
        return 2
    tidy = find_tool("clang-tidy-14", "clang-tidy")
    if not tidy:
        print("lint: clang-tidy not installed (make deps installs clang-tidy-14)", file=sys.stderr)
        return 2
    clangxx = find_tool("clang++-14", "clang++")
    cache_dir = None
    if not opts.no_cache:
        cache_dir = os.environ.get("OMNIFORGE_TIDY_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "omniforge-tidy")

    with open(db_path) as f:
        entries = json.load(f)
    wanted = {os.path.relpath(os.path.abspath(p), ROOT) for p in opts.files}
    todo = {}
    for entry in entries:
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        rel = os.path.relpath(path, ROOT)
        if rel.startswith("..") or excluded(rel) or (wanted and rel not in wanted):
            continue
        if not rel.startswith(tuple(d + "/" for d in SOURCE_DIRS)):
            continue
        todo.setdefault(rel, entry)  # a file compiled twice is checked once
    missing = wanted - set(todo)
    if missing:
        print(f"lint: not in {db_path} or excluded: {' '.join(sorted(missing))}", file=sys.stderr)
        return 2

    linter = Linter(build_dir, tidy, clangxx, cache_dir)
    start = time.monotonic()
    failed, cached = [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        futures = [pool.submit(linter.check, todo[rel], rel) for rel in sorted(todo)]
        for future in concurrent.futures.as_completed(futures):
            rel, output, from_cache = future.result()
            cached += from_cache
            if output:
                failed.append(rel)
                print(output, flush=True)
    if cache_dir and not wanted and os.path.isdir(cache_dir):
        linter.prune()
    took = time.monotonic() - start
    print(f"lint: clang-tidy checked {len(todo)} files ({cached} unchanged since a clean run, "
          f"skipped) in {took:.0f} s with {opts.jobs} jobs; {len(failed)} with findings",
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
