#!/usr/bin/env bash
# scripts/sanitizer_logs.sh, which make asan and make tsan run after ctest:
# an empty report directory passes; a report a process left there (a
# service binary's leak report at exit, say) fails the run and is printed.
# Usage: sanitizer_logs_test.sh <source dir>
set -euo pipefail
script=$1/scripts/sanitizer_logs.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

if ! out=$(bash "$script" "$dir" 2>&1); then
  echo "FAIL an empty report directory failed: $out"
  exit 1
fi
[[ $out == *"no report"* ]] || { echo "FAIL no 'no report' line: $out"; exit 1; }
echo "ok   no report: passes"

printf '==4242==ERROR: LeakSanitizer: detected memory leaks\nDirect leak of 64 byte(s)\n' \
  >"$dir/asan.omniforge-orchestrator.4242"
if out=$(bash "$script" "$dir" 2>&1); then
  echo "FAIL a report passed: $out"
  exit 1
fi
for expected in "asan.omniforge-orchestrator.4242" "detected memory leaks" "1 process(es) reported"; do
  [[ $out == *"$expected"* ]] || { echo "FAIL '$expected' not printed: $out"; exit 1; }
done
echo "ok   a service's leak report: fails, printed"

if bash "$script" 2>/dev/null; then
  echo "FAIL no directory given, yet it passed"
  exit 1
fi
echo "ok   no directory: usage error"
