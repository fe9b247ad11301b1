#!/usr/bin/env bash
# Every binary answers --version with its name and the same version, which
# is VERSION and the commit this tree is at ("0.1.0-412-g25f456c", with
# "-dirty" for changed sources): what image tags and support use.
# Usage: version_test.sh <source dir> <binary>...
set -euo pipefail
src=$1
shift
base=$(tr -d '[:space:]' <"$src/VERSION")
expected="^${base//./\\.}(-[0-9]+-g[0-9a-f]{7,}(-dirty)?)?$"
if commit=$(git -C "$src" rev-parse --short=7 HEAD 2>/dev/null); then
  expected="^${base//./\\.}-[0-9]+-g${commit}(-dirty)?$"
fi
versions=()
for bin in "$@"; do
  out=$("$bin" --version)
  name=$(basename "$bin")
  if [[ "${out%% *}" != "$name" ]]; then
    echo "FAIL $bin --version says '$out', not its name first"
    exit 1
  fi
  version=${out#* }
  if ! [[ "$version" =~ $expected ]]; then
    echo "FAIL $bin --version says '$version', expected /$expected/"
    exit 1
  fi
  versions+=("$version")
  echo "ok   $out"
done
if [[ $(printf '%s\n' "${versions[@]}" | sort -u | wc -l) != 1 ]]; then
  echo "FAIL the binaries report different versions: ${versions[*]}"
  exit 1
fi
