#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan) in build-fuzz
# and runs each for FUZZ_SECONDS (docs/fuzzing.md). Fails when a target
# crashes, leaks, times out on an input or breaks a property; prints one
# summary line per target with its executions per second and coverage.
#   FUZZ_SECONDS   how long each target runs (default 60)
#   FUZZ_TARGETS   space-separated target names (default: all)
#   FUZZ_BUILD_DIR the build directory (default build-fuzz)
#   JOBS           build parallelism (default 2)
# Each target's working corpus is $FUZZ_BUILD_DIR/corpus/<name>, read with
# the committed seeds fuzz/corpus/<name> (never written); what libFuzzer
# finds goes to $FUZZ_BUILD_DIR/artifacts/<name>/, its log to
# $FUZZ_BUILD_DIR/logs/<name>.log.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${JOBS:-2}
ALL_TARGETS=(sse json_scan mcp_framing spool_record api_keys config array_literal)
read -r -a targets <<<"${FUZZ_TARGETS:-${ALL_TARGETS[*]}}"
[[ ${#targets[@]} -gt 0 ]] || targets=("${ALL_TARGETS[@]}")

# Longest input per target: a few SSE events or JSON-RPC lines, a spool
# file of a few records, a key file or config of some dozen lines.
max_len_of() {
  case "$1" in
    sse | mcp_framing | spool_record) echo 16384 ;;
    json_scan) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

for name in "${targets[@]}"; do
  if [[ ! " ${ALL_TARGETS[*]} " == *" $name "* ]]; then
    echo "fuzz: unknown target '$name' (targets: ${ALL_TARGETS[*]})" >&2
    exit 2
  fi
done
if ! [[ "$FUZZ_SECONDS" =~ ^[0-9]+$ ]] || ((FUZZ_SECONDS < 1)); then
  echo "fuzz: FUZZ_SECONDS must be a positive number of seconds" >&2
  exit 2
fi
if ! command -v clang++-14 >/dev/null 2>&1; then
  echo "fuzz: clang++-14 not found (make deps installs clang-14 and libclang-rt-14-dev)" >&2
  exit 1
fi

build_start=$SECONDS
if [[ ! -f "$FUZZ_BUILD_DIR/CMakeCache.txt" ]]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$FUZZ_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DOMNIFORGE_FUZZ=ON >/dev/null
fi
cmake --build "$FUZZ_BUILD_DIR" -j"$JOBS" --target "${targets[@]/%/_fuzz}" >/dev/null
echo "fuzz: built ${#targets[@]} targets in $((SECONDS - build_start)) s" >&2

# A field of libFuzzer's final lines, e.g. `stat::average_exec_per_sec: 1234`.
stat_of() { sed -n "s/^stat::$2: *\([0-9]*\).*/\1/p" "$1" | tail -n 1; }
# `cov: X ft: Y corp: Z` of the last status line.
done_field() { grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$1" | tail -n 1 |
  sed -n "s/.*[[:space:]]$2: \([0-9]*\).*/\1/p" || true; }

failed=()
summaries=()
for name in "${targets[@]}"; do
  corpus="$FUZZ_BUILD_DIR/corpus/$name"
  artifacts="$FUZZ_BUILD_DIR/artifacts/$name"
  log="$FUZZ_BUILD_DIR/logs/$name.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  args=(-max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048
        -max_len="$(max_len_of "$name")" -print_final_stats=1 -artifact_prefix="$artifacts/")
  [[ -f "fuzz/$name.dict" ]] && args+=(-dict="fuzz/$name.dict")
  echo "fuzz: $name for ${FUZZ_SECONDS} s ..." >&2
  started="$log.start"
  touch "$started"
  status=0
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$FUZZ_BUILD_DIR/bin/${name}_fuzz" "${args[@]}" "$corpus" "fuzz/corpus/$name" >"$log" 2>&1 ||
    status=$?
  execs=$(stat_of "$log" number_of_executed_units)
  rate=$(stat_of "$log" average_exec_per_sec)
  rss=$(stat_of "$log" peak_rss_mb)
  cov=$(done_field "$log" cov)
  ft=$(done_field "$log" ft)
  corp=$(done_field "$log" corp)
  line="$name: ${execs:-?} execs, ${rate:-?}/s, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}, peak ${rss:-?} MB"
  if ((status != 0)); then
    failed+=("$name")
    line="FAIL $line (exit $status; log $log)"
    echo "fuzz: $name failed; the end of $log:" >&2
    tail -n 40 "$log" >&2
    find "$artifacts" -type f -newer "$started" -printf 'fuzz: artifact %p\n' >&2 || true
  else
    line="ok   $line"
  fi
  summaries+=("$line")
  echo "fuzz: $line" >&2
done

echo "fuzz summary (${FUZZ_SECONDS} s per target):"
printf '  %s\n' "${summaries[@]}"
if ((${#failed[@]} > 0)); then
  echo "fuzz: FAILED: ${failed[*]} (reproduce: $FUZZ_BUILD_DIR/bin/<name>_fuzz <artifact>)" >&2
  exit 1
fi
