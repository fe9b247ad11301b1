#!/usr/bin/env bash
# `make run` end to end, as CI runs it: scripts/run.sh twice against a stack
# of its own (free ports, its own PostgreSQL cluster and state directory, so
# it never meets other tests or a developer's running stack), then
# `stack.sh down` (what `make down` runs). Checks the outcome of each of the
# demo's journeys, that the second run seeds nothing twice, and that
# down leaves no process behind.
#
#   make_run_test.sh BUILD_DIR
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export BUILD_DIR="${1:?usage: make_run_test.sh BUILD_DIR}"
WORK="$(mktemp -d /tmp/omniforge-demo-test-XXXXXX)"
# PostgreSQL runs as its own user, which must reach its data directory.
chmod 755 "$WORK"
export OMNIFORGE_STATE_DIR="$WORK/state" OMNIFORGE_PG_DIR="$WORK/pg"
# The meeting journey's "tomorrow" is a working day whatever day the test
# runs: the meeting flow's and the sandbox's clocks start on a Tuesday.
export OMNIFORGE_STACK_NOW="2026-11-24T08:00:00Z"
# One run of the demo may take this long (the first takes about 15 s on a
# busy 2-core machine, the second about 3 s).
RUN_TIMEOUT_S=75

# Free loopback ports: 4 for gRPC, 4 for metrics, 1 for PostgreSQL.
read -r OMNIFORGE_PORT_BASE OMNIFORGE_METRICS_PORT_BASE OMNIFORGE_PG_PORT < <(
  /usr/bin/python3 - <<'PY'
import random, socket

def free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False

def block(n):
    while True:
        base = random.randrange(20000, 32000)
        if all(free(base + i) for i in range(n)):
            return base

print(block(4), block(4), block(1))
PY
)
export OMNIFORGE_PORT_BASE OMNIFORGE_METRICS_PORT_BASE OMNIFORGE_PG_PORT

stop_stack() { bash "$ROOT/scripts/stack.sh" down >"$WORK/down.log" 2>&1; }
cleanup() {
  stop_stack || true
  [ -n "${KEEP_DEMO_LOGS:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

failures=0
check() {  # check LOG TEXT WHAT: LOG contains TEXT
  if grep -qF -- "$2" "$1"; then
    echo "ok   $3"
  else
    echo "FAIL $3: '$2' not in $(basename "$1")"
    failures=$((failures + 1))
  fi
}
check_count() {  # check_count LOG TEXT N WHAT: TEXT on exactly N lines of LOG
  local n
  n=$(grep -cF -- "$2" "$1" || true)
  if [[ "$n" == "$3" ]]; then
    echo "ok   $4"
  else
    echo "FAIL $4: '$2' on $n lines of $(basename "$1"), expected $3"
    failures=$((failures + 1))
  fi
}

run_demo() {  # run_demo LOG
  local start=$SECONDS
  if ! timeout "$RUN_TIMEOUT_S" bash "$ROOT/scripts/run.sh" >"$1" 2>&1; then
    echo "FAIL scripts/run.sh did not finish within ${RUN_TIMEOUT_S} s or failed; its output:"
    cat "$1"
    exit 1
  fi
  echo "scripts/run.sh took $((SECONDS - start)) s"
  if grep -q $'\033' "$1"; then
    echo "FAIL the demo's piped output holds terminal escapes"
    failures=$((failures + 1))
  fi
}

check_journeys() {  # check_journeys LOG
  local log="$1"
  check "$log" "⚠ waiting for your approval: a new agent 'monday-notion-updates" \
    "1. a problem in plain words becomes an agent draft that waits for approval"
  check "$log" "It runs every Monday at 09:00 (UTC). It reads from notion. It sends the result to the team channel." \
    "2. later answers fill in the draft"
  check "$log" "← create_agent ok" "2. \"yes\" creates the agent"
  check "$log" "You came to me with: \"our Monday Notion updates take hours" \
    "3. \"where were we?\" recaps what the user came for"
  check "$log" "- the agent 'monday-notion-updates" \
    "3. the recap names the agent created"
  check "$log" "- waiting for your approval: run 'monday-notion-updates" \
    "3. the recap names the run still waiting for approval"
  check "$log" "Done: 'monday-notion-updates" "3. the run waits through the recap and a yes runs it"
  check "$log" "→ list_agents {}  (read)" "4. \"list my agents\" lists them"
  check "$log" "Done: 'invoice-chaser' ran (succeeded)." "4. \"run the first one\" runs the first agent after a yes"
  check "$log" "- Acme Corp: invoice 1042, 30 days overdue (todo)" "4. the run did its step: its output lists the overdue invoices"
  check "$log" "launch-watch: succeeded at" "8. an agent on a schedule of every minute ran on its own"
  check "$log" "(scheduled) — 3 tasks:" "8. ... and \"did it run ok?\" is answered from its real run"
  check "$log" "Your agent 'release-watch' failed on its scheduled run of" \
    "8. a scheduled run that failed is told at the user's next turn"
  check "$log" "no project matches 'Spring release'" "8. ... with why it failed"
  check "$log" "risk:     high — deletes data that cannot be recovered" "4. a delete waits for approval as a high risk"
  check "$log" "Nothing was changed." "4. \"cancel\" leaves everything as it was"
  check "$log" "'invoice-chaser' partly fits: it covers \"chase the overdue invoices\"" \
    "5. a two-part request names the agent that partly fits and the part it covers"
  check "$log" "but not \"post a weekly summary to slack\"." "5. ... and the part it does not"
  check "$log" "1. Run 'invoice-chaser' anyway" "5. option: run the agent anyway"
  check "$log" "2. Create a new agent that does both" "5. option: a new agent that does both"
  check "$log" "3. Change 'invoice-chaser' so that it also does this: post a weekly summary to slack." \
    "5. option: change the agent"
  check "$log" "⚠ waiting for your approval: a new agent 'chase-overdue-invoices" \
    "5. \"2\" drafts the new agent for the whole request"
  check "$log" "Which John do you mean?" "6. a meeting with \"John\" asks which of the two Johns"
  check "$log" "is taken: it overlaps your event \"Design review\"" \
    "6. the requested time conflicts, and what it overlaps is said"
  check "$log" "Which one should I book?" "6. ... with the free times offered"
  check "$log" "⚠ waiting for your approval: book \"Call with Sarah Chen and John Smith\"" \
    "6. the booking waits for approval"
  check "$log" "Booked \"Call with Sarah Chen and John Smith\"" "6. \"yes\" books it"
  check "$log" "get_project_details: 0 context documents, project 'Website relaunch', 3 tasks" \
    "7. an audit becomes a plan whose steps say what they found"
  check "$log" "list_tasks: project 'Website relaunch', 3 tasks (Write the announcement" \
    "7. the plan's steps run and report"
  check "$log" "#9 user: where were we?" "memory keeps the conversation in order"
  check "$log" "\"secrets_detected\":[\"openai_api_key\"]" "a pasted secret is flagged"
  check "$log" "user: sure, here is our token: [REDACTED]" "a pasted secret is stored masked"
  check "$log" "CHAT_ERROR_CODE_SECRET_MASKED" "the user is told a pasted secret was masked"
  check "$log" "times the token appears in the service logs: 0)" "a pasted secret never reaches the logs"
  check "$log" "error: NOT_FOUND: conversation" "another tenant cannot see the conversation"
  check "$log" "error: UNAUTHENTICATED: caller assertion missing" \
    "a user merely named, without a signed assertion, is not believed"
}

# The seeded workspace, read from the executor after both runs: each item
# once.
check_seeded_once() {
  local out="$WORK/seeded.json"
  local cli=("$BUILD_DIR/bin/omniforge" --executor-server "127.0.0.1:$((OMNIFORGE_PORT_BASE + 3))"
             --identity-key "$OMNIFORGE_STATE_DIR/operator-identity.key"
             --identity-key-id operator --tenant demo --user demo-user tools invoke)
  {
    "${cli[@]}" list_agents '{}'
    "${cli[@]}" list_project_templates '{}'
    "${cli[@]}" search_projects '{}'
  } >"$out" 2>/dev/null
  local name
  for name in weekly-sales-digest invoice-chaser "Launch checklist" "Website relaunch"; do
    check_count "$out" "\"name\": \"$name\"," 1 "after two runs the workspace holds $name once"
  done
}

echo "== first run (stack on 127.0.0.1:$OMNIFORGE_PORT_BASE, PostgreSQL on :$OMNIFORGE_PG_PORT)"
run_demo "$WORK/run1.log"
check "$WORK/run1.log" "created an API key for the demo user" "the first run creates the demo key"
check_journeys "$WORK/run1.log"
for agent in weekly-sales-digest invoice-chaser; do
  check_count "$WORK/run1.log" "  agent: $agent" 1 "the workspace is seeded with $agent"
done

echo "== second run, on the running stack"
run_demo "$WORK/run2.log"
check "$WORK/run2.log" "orchestrator already running" "the second run reuses the running stack"
check_journeys "$WORK/run2.log"
for agent in weekly-sales-digest invoice-chaser; do
  check_count "$WORK/run2.log" "  agent: $agent" 1 "the second run does not seed $agent again"
done

check_seeded_once

# Each service's environment names only keys it reads (what the stack
# exports for its scripts and the client is not passed on).
stray=$(grep -h "name no configuration key" "$OMNIFORGE_STATE_DIR"/logs/*.log || true)
if [[ -z "$stray" ]]; then
  echo "ok   no service was given an OMNIFORGE_* variable that names no key of it"
else
  echo "FAIL a service was given variables that name no key of it: $stray"
  failures=$((failures + 1))
fi

# Each service has its caller-assertion keys: none believes identity
# metadata alone or makes calls without an assertion.
unkeyed=$(grep -hE "identity\.(trusted_keys|signing_key_file) is empty" \
  "$OMNIFORGE_STATE_DIR"/logs/*.log || true)
if [[ -z "$unkeyed" ]]; then
  echo "ok   every service verifies or signs caller assertions as it should"
else
  echo "FAIL a service runs without its caller-assertion keys: $unkeyed"
  failures=$((failures + 1))
fi

echo "== make down"
pids=()
for pidfile in "$OMNIFORGE_STATE_DIR"/run/*.pid; do pids+=("$(cat "$pidfile")"); done
pids+=("$(head -n 1 "$OMNIFORGE_PG_DIR/data/postmaster.pid")")
stop_stack || { echo "FAIL stack.sh down failed:"; cat "$WORK/down.log"; exit 1; }
# A process counts while it runs: an exited one the system has not reaped
# yet (a zombie) does not.
running() {
  local state
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null || true)
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}
left=()
for _ in $(seq 1 50); do
  left=()
  for pid in "${pids[@]}"; do
    if running "$pid"; then left+=("$pid"); fi
  done
  # Anything else started from this stack's directories (PostgreSQL's
  # workers name its data directory).
  while read -r pid; do
    if running "$pid"; then left+=("$pid"); fi
  done < <(pgrep -f "$WORK" || true)
  ((${#left[@]} == 0)) && break
  sleep 0.1
done
if ((${#left[@]} == 0)); then
  echo "ok   down stopped the ${#pids[@]} processes it started (4 services, PostgreSQL) and nothing is left"
else
  echo "FAIL processes left after down: ${left[*]}"
  ps -o pid,args -p "$(IFS=,; echo "${left[*]}")" || true
  failures=$((failures + 1))
fi

if ((failures > 0)); then
  echo "$failures checks failed"
  exit 1
fi
echo "all checks passed"
