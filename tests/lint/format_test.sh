#!/usr/bin/env bash
# Every tracked C++ source (*.cc, *.h) is formatted as `make format` would
# format it (.clang-format: Google base, 100 columns). Fails listing the files
# clang-format would change; `make format` fixes them.
#
# Usage: format_test.sh [REPO_ROOT]   (default: this script's checkout)
# Environment: CLANG_FORMAT  the binary (default clang-format-14, else clang-format)
set -euo pipefail
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
cd "$root"

clang_format="${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}"
if [[ -z "$clang_format" ]]; then
  echo "FAIL: clang-format not installed (make deps installs clang-format-14)"
  exit 1
fi

# Tracked files when this is a git checkout; otherwise every source outside
# build directories (a source tarball).
files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  while IFS= read -r -d '' f; do [[ -f "$f" ]] && files+=("$f"); done \
    < <(git ls-files -z -- '*.cc' '*.h')
else
  while IFS= read -r -d '' f; do files+=("$f"); done \
    < <(find . \( -type d \( -name 'build*' -o -name .git -o -name node_modules \) -prune \) \
          -o -type f \( -name '*.cc' -o -name '*.h' \) -print0)
fi

# --dry-run -Werror exits non-zero and prints one warning per change; keep
# only the names of the files that would change. Any other failure (a file
# clang-format cannot read, a bad .clang-format) fails with its output.
rc=0
out=$(printf '%s\0' "${files[@]}" | xargs -0 -r "$clang_format" --dry-run -Werror 2>&1) || rc=$?
unformatted=$(sed -n 's/^\(.*\.\(cc\|h\)\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' \
  <<<"$out" | sort -u)
if [[ -n "$unformatted" ]]; then
  echo "FAIL: $(wc -l <<<"$unformatted") of ${#files[@]} files are not clang-formatted (run make format):"
  sed 's/^/  /' <<<"$unformatted"
  exit 1
fi
if ((rc != 0)); then
  echo "FAIL: $clang_format exited with $rc:"
  echo "$out"
  exit 1
fi
echo "ok: ${#files[@]} files are clang-formatted ($("$clang_format" --version | grep -o 'version [0-9.]*'))"
