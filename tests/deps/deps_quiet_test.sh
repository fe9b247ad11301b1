#!/usr/bin/env bash
# `make deps` on a machine that has everything (as it does once `make test`
# got this far, since `make test` runs it first): it must change nothing and
# say nothing, so that every make target can run it unconditionally.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
before=$(dpkg-query -W -f='${Package} ${Version}\n' | sha256sum)
out=$(bash "$root/scripts/deps.sh" 2>&1)
after=$(dpkg-query -W -f='${Package} ${Version}\n' | sha256sum)
if [[ -n "$out" ]]; then
  echo "FAIL: scripts/deps.sh printed something with everything installed:"
  echo "$out"
  exit 1
fi
if [[ "$before" != "$after" ]]; then
  echo "FAIL: scripts/deps.sh changed the installed packages"
  exit 1
fi
echo "ok: scripts/deps.sh is silent and changes nothing when everything is installed"
