#!/usr/bin/env bash
# After a sanitized test run (make asan, make tsan): the reports the
# sanitizers wrote to DIR through their `log_path` option, one file per
# process that reported (<tool>.<executable>.<pid>, with `log_exe_name=1`).
# A service binary a test started reports there too, including
# LeakSanitizer's report when it exits, which its test never sees.
# Prints each report (its first 80 lines) and exits 1 when there is one;
# says so and exits 0 when there is none.
#   scripts/sanitizer_logs.sh DIR
set -euo pipefail

dir=${1:?usage: scripts/sanitizer_logs.sh DIR}
shopt -s nullglob
reports=("$dir"/*)
if ((${#reports[@]} == 0)); then
  echo "sanitizers: no report in $dir"
  exit 0
fi
for report in "${reports[@]}"; do
  echo "=== $(basename "$report") ($(wc -l <"$report") lines)"
  head -n 80 "$report"
done
echo "sanitizers: ${#reports[@]} process(es) reported, in $dir" >&2
exit 1
