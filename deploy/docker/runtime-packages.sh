#!/usr/bin/env bash
# Prints, one per line, the Debian packages that own the shared libraries the
# given binaries load (ldd, then dpkg -S). The image's runtime stage installs
# exactly these. Fails when a library belongs to no package or is missing.
set -euo pipefail

(($# > 0)) || { echo "usage: $0 BINARY..." >&2; exit 2; }

declare -A packages=()
while read -r lib; do
  owner=""
  for candidate in "$lib" "$(readlink -f "$lib")" "/usr$lib" "${lib#/usr}"; do
    if owner=$(dpkg-query -S "$candidate" 2>/dev/null); then
      break
    fi
    owner=""
  done
  if [[ -z "$owner" ]]; then
    echo "runtime-packages: no Debian package owns $lib" >&2
    exit 1
  fi
  # "libfoo1:amd64: /usr/lib/..." -> libfoo1
  packages["${owner%%:*}"]=1
done < <(
  for bin in "$@"; do
    if ldd "$bin" | grep -q 'not found'; then
      echo "runtime-packages: $bin has unresolved libraries:" >&2
      ldd "$bin" | grep 'not found' >&2
      exit 1
    fi
    ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
  done | sort -u
)

printf '%s\n' "${!packages[@]}" | sort
